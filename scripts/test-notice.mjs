// Runs before `npm test`: says in one line what will not run, before the output scrolls past.
if (!process.env.TEST_DATABASE_URL) {
  console.log(
    'Note: TEST_DATABASE_URL is not set, so every PostgreSQL suite is skipped (counted under "skipped" at the end). ' +
      'Set it, e.g. TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm test, to run them.',
  );
}
