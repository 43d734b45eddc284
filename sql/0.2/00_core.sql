\echo Use "CREATE EXTENSION mvinc" to load this file. \quit

-- mvinc install script, part 00: the server set-up check.
-- The extension schema is "mvinc" (see mvinc.control); every object here is
-- created in it and referenced schema-qualified, so search_path cannot
-- redirect the extension's own calls.

CREATE FUNCTION mvinc._check_setup() RETURNS void
    LANGUAGE c STRICT
    AS 'MODULE_PATHNAME', 'mvinc_check_setup';

SELECT mvinc._check_setup();

-- The extension's own tables are heap whatever the session's default table
-- access method is (CREATE EXTENSION scopes this SET LOCAL to the script).
SET LOCAL default_table_access_method = heap;

-- Users reach mvinc's views and functions through the schema; each object
-- grants or revokes what it needs (internal functions, change logs and view
-- storage stay closed).
GRANT USAGE ON SCHEMA mvinc TO PUBLIC;
REVOKE ALL ON FUNCTION mvinc._check_setup() FROM PUBLIC;
