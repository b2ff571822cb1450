/*
 * test_sqlite.c - SQLite, a library with locks of its own, in preempted
 * fibers that move between workers.
 *
 * SQLite's default (serialized) mode guards every connection with a
 * recursive pthread mutex, which its calls take nested (sqlite3_exec takes
 * it, then sqlite3_prepare_v2 again inside); the database files with POSIX
 * locks, a process-wide table under its own pthread mutexes, and a busy
 * handler that sleeps.  A fiber that moved while it held a connection's
 * mutex once hung the whole program (sync/pthread.c, own_locked).
 *
 * usage: test_sqlite CASE DIRECTORY
 *   shared    FIBERS fibers insert through one connection, each with its
 *             own prepared statement, while others read through it
 *   separate  FIBERS fibers, a connection each, to one WAL database: write
 *             transactions (BEGIN IMMEDIATE, waiting on the busy handler)
 *             and reads of a consistent snapshot
 * 2 workers, 50 us slices.  Every row is counted back, the sums of each
 * fiber's rows checked, and PRAGMA integrity_check must say "ok".  A hang
 * is a failure (an alarm here, CTest's TIMEOUT besides).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"
#include "xfiber.h"

#define FIBERS	   24
#define ROWS	   400 /* per writer */
#define PER_COMMIT 20  /* rows per transaction (separate) */

static char path[4096];
static sqlite3 *shared_db;
static atomic_int readers_ok, writers_done;

static void sql_check(sqlite3 *db, int rc, int want, const char *what)
{
	if (rc != want)
		xf_test_fail("%s: %s (%d)", what, sqlite3_errmsg(db), rc);
}

static void exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
		xf_test_fail("%s: %s", sql, err ? err : "?");
}

static sqlite3 *open_db(void)
{
	sqlite3 *db;

	sql_check(NULL, sqlite3_open_v2(path, &db,
					SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
					    SQLITE_OPEN_FULLMUTEX,
					NULL),
		  SQLITE_OK, "sqlite3_open_v2");
	sqlite3_busy_timeout(db, 30000);
	return db;
}

static int64_t query_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v;

	sql_check(db, sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, sql);
	sql_check(db, sqlite3_step(st), SQLITE_ROW, sql);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void check_integrity(sqlite3 *db)
{
	sqlite3_stmt *st;
	const char *q = "PRAGMA integrity_check";

	sql_check(db, sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK, q);
	sql_check(db, sqlite3_step(st), SQLITE_ROW, q);
	if (strcmp((const char *)sqlite3_column_text(st, 0), "ok"))
		xf_test_fail("integrity_check: %s", sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
}

/* Inserts ROWS rows (fiber, seq, v = fiber * 1000 + seq) through db; in
 * transactions of PER_COMMIT when `transactions`. */
static void insert_rows(sqlite3 *db, int fiber, bool transactions)
{
	sqlite3_stmt *st;
	const char *q = "INSERT INTO t(fiber, seq, v, pad) VALUES(?, ?, ?, hex(randomblob(32)))";

	sql_check(db, sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK, q);
	for (int i = 0; i < ROWS; i++) {
		if (transactions && i % PER_COMMIT == 0)
			exec(db, "BEGIN IMMEDIATE");
		sqlite3_bind_int(st, 1, fiber);
		sqlite3_bind_int(st, 2, i);
		sqlite3_bind_int64(st, 3, (int64_t)fiber * 1000 + i);
		sql_check(db, sqlite3_step(st), SQLITE_DONE, "insert");
		sqlite3_reset(st);
		if (transactions && i % PER_COMMIT == PER_COMMIT - 1)
			exec(db, "COMMIT");
	}
	sqlite3_finalize(st);
}

/* A reader's snapshot is consistent: a fiber's rows are always a prefix of
 * its sequence (count = max + 1), whatever the writers are doing. */
static void read_snapshot(sqlite3 *db)
{
	sqlite3_stmt *st;
	const char *q = "SELECT fiber, count(*), max(seq), sum(v) FROM t GROUP BY fiber";

	sql_check(db, sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK, q);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t fiber = sqlite3_column_int64(st, 0), n = sqlite3_column_int64(st, 1);
		int64_t max = sqlite3_column_int64(st, 2), sum = sqlite3_column_int64(st, 3);

		if (n != max + 1 || sum != fiber * 1000 * n + n * (n - 1) / 2)
			xf_test_fail("fiber %ld: %ld rows up to seq %ld, sum %ld", (long)fiber,
				     (long)n, (long)max, (long)sum);
	}
	sqlite3_finalize(st);
}

static void *shared_writer(void *arg)
{
	insert_rows(shared_db, (int)(intptr_t)arg, false);
	atomic_fetch_add(&writers_done, 1);
	return NULL;
}

static void *shared_reader(void *arg)
{
	(void)arg;
	while (atomic_load(&writers_done) < FIBERS / 2) {
		read_snapshot(shared_db);
		atomic_fetch_add(&readers_ok, 1);
		usleep(100);
	}
	return NULL;
}

static void *separate_writer(void *arg)
{
	sqlite3 *db = open_db();

	insert_rows(db, (int)(intptr_t)arg, true);
	sql_check(db, sqlite3_close(db), SQLITE_OK, "sqlite3_close");
	atomic_fetch_add(&writers_done, 1);
	return NULL;
}

static void *separate_reader(void *arg)
{
	sqlite3 *db = open_db();

	(void)arg;
	while (atomic_load(&writers_done) < FIBERS / 2) {
		exec(db, "BEGIN");
		read_snapshot(db);
		exec(db, "COMMIT");
		atomic_fetch_add(&readers_ok, 1);
	}
	sql_check(db, sqlite3_close(db), SQLITE_OK, "sqlite3_close");
	return NULL;
}

static void on_alarm(int sig)
{
	static const char msg[] = "FAIL: SQLite hung in fibers (watchdog alarm)\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0) {
	}
	_exit(1);
}

int main(int argc, char **argv)
{
	xf_fiber *f[FIBERS];
	bool shared;
	sqlite3 *db;
	xf_stats st;

	if (argc != 3 || (strcmp(argv[1], "shared") && strcmp(argv[1], "separate")))
		xf_test_fail("usage: test_sqlite shared|separate DIRECTORY");
	shared = !strcmp(argv[1], "shared");
	if (sqlite3_threadsafe() != 1)
		xf_test_skip("this SQLite is not built serialized (SQLITE_THREADSAFE=%d)",
			     sqlite3_threadsafe());
	snprintf(path, sizeof(path), "%s/test_sqlite_%s_%d.db", argv[2], argv[1], (int)getpid());
	signal(SIGALRM, on_alarm);
	alarm(50);

	db = open_db();
	exec(db, "PRAGMA journal_mode=WAL");
	exec(db, "CREATE TABLE t(fiber INTEGER, seq INTEGER, v INTEGER, pad TEXT)");
	if (shared)
		shared_db = db;

	CHECK_ERR(xf_init(&(xf_config){.workers = 2, .slice_us = 50}), 0);
	for (int i = 0; i < FIBERS; i++) {
		void *(*fn)(void *) = i % 2 ? (shared ? shared_reader : separate_reader)
					    : (shared ? shared_writer : separate_writer);

		CHECK_ERR(xf_spawn(&f[i], fn, (void *)(intptr_t)i, NULL), 0);
	}
	for (int i = 0; i < FIBERS; i++)
		CHECK_ERR(xf_join(f[i], NULL), 0);
	CHECK_ERR(xf_stats_get(&st), 0);
	CHECK_ERR(xf_shutdown(), 0);

	/* Every row there, once: FIBERS/2 writers of ROWS each. */
	read_snapshot(db);
	CHECK(query_int(db, "SELECT count(*) FROM t") == (int64_t)(FIBERS / 2) * ROWS);
	CHECK(query_int(db, "SELECT count(DISTINCT fiber) FROM t") == FIBERS / 2);
	check_integrity(db);
	sql_check(db, sqlite3_close(db), SQLITE_OK, "sqlite3_close");
	for (const char *const *ext = (const char *const[]){"", "-wal", "-shm", NULL}; *ext; ext++) {
		char p[sizeof(path) + 8];

		snprintf(p, sizeof(p), "%s%s", path, *ext);
		unlink(p);
	}
	printf("%s: %d rows by %d writers, %d consistent reads, %lu preemptions, %lu switches\n",
	       argv[1], (FIBERS / 2) * ROWS, FIBERS / 2, atomic_load(&readers_ok),
	       (unsigned long)st.total.preemptions, (unsigned long)st.total.switches);
	if (!st.total.preemptions)
		xf_test_fail("no preemption: SQLite ran undisturbed and proved nothing");
	return 0;
}
