"""A test-only app for contrib.drf: a model with every standard Django field type, and toolsets."""
