"""Every provider's fake, as the generate() and stream() tests use them."""

from tests.test_generate_providers import call  # noqa: F401
from tests.test_stream_providers import case  # noqa: F401
