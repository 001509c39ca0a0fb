import logging

# The client logs reconnections and failed logins, which the tests cause on
# purpose; keep them out of the test output.
logging.getLogger("boomerang").addHandler(logging.NullHandler())
