"""Demo handlers and tools for the demo site and the test suite."""
