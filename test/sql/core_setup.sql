-- The extension installs into its own schema and checks the server set-up.
SELECT extname, extversion, nspname
  FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
 WHERE extname = 'mvinc';
SHOW wal_level;
