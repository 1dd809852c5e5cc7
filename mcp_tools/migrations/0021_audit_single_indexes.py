# The audit table's own indexes on created_at and tool_name go: the two usage indexes lead with
# those columns and serve every lookup the single-column ones did, while each index costs every
# call's audit row one more insert (on SQLite about 5,300 instructions per row and index).
#
# On SQLite, AlterField would copy the whole table to drop an index; there the index is dropped
# (and, going back, made again) by the name Django gave it. Elsewhere AlterField's own schema
# change is used: it also drops PostgreSQL's second ("_like") index of a character column.

import django.utils.timezone
from django.db import migrations, models, router

COLUMNS = ("created_at", "tool_name")


def _fields(apps, schema_editor):
    """The audit model of this state and, per column, its field with and without an index; none
    on a database the audit table is not migrated on (a router sends it elsewhere)."""
    model = apps.get_model("mcp_tools", "AuditEvent")
    if not router.allow_migrate_model(schema_editor.connection.alias, model):
        return
    for name in COLUMNS:
        field = model._meta.get_field(name)
        indexed, plain = field.clone(), field.clone()
        indexed.db_index, plain.db_index = True, False
        for each in (indexed, plain):
            each.set_attributes_from_name(name)
            each.model = model
        yield model, indexed, plain


def drop(apps, schema_editor):
    for model, indexed, plain in _fields(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            name = schema_editor._create_index_name(model._meta.db_table, [indexed.column])
            schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(name)}")
        else:
            schema_editor.alter_field(model, indexed, plain)


def restore(apps, schema_editor):
    for model, indexed, plain in _fields(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            schema_editor.execute(schema_editor._create_index_sql(model, fields=[indexed]))
        else:
            schema_editor.alter_field(model, plain, indexed)


class Migration(migrations.Migration):
    dependencies = [
        ("mcp_tools", "0020_discovery"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="auditevent",
                    name="created_at",
                    field=models.DateTimeField(default=django.utils.timezone.now, verbose_name="time"),
                ),
                migrations.AlterField(
                    model_name="auditevent",
                    name="tool_name",
                    field=models.CharField(max_length=128, verbose_name="tool"),
                ),
            ],
            database_operations=[migrations.RunPython(drop, restore, elidable=False)],
        ),
    ]
