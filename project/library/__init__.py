"""The demo library: authors, tags and 10,000 books, exposed as model tools (contrib.drf)."""
