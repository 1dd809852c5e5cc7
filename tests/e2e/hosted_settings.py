"""The demo's settings for the hosted-client flows of tests/e2e/test_oauth_e2e.py: client ID
metadata documents are fetched from a local document server instead of the client's host."""

from project.settings import *  # noqa: F403

OAUTH2_PROVIDER = {
    **OAUTH2_PROVIDER,  # noqa: F405
    "CIMD_METADATA_FETCHER": "tests.support.cimd_documents.LocalDocuments",
}
