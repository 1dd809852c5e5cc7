#!/usr/bin/env python
"""The tutorial's site: an existing Django project with MCP added (docs/tutorial/index.md)."""

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mysite.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
