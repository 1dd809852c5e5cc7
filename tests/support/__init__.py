"""Helpers the test suites share (not tests): live servers, the schema-checking client, test auth
backends, the fuzzer's parts, the reachability of PostgreSQL and Redis, the several-hosts cluster."""
