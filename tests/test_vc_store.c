#include "vc_store.h"
#include "vc_test.h"
#include "vc_util.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

static int put_many(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    int *round = arg;
    char val[4000];
    memset(val, 'x', sizeof(val));
    for (int i = 0; i < 100; i++) {
        unsigned char k[8];
        vc_store_u64_key((uint64_t)(*round * 100 + i), k);
        MDB_val key = {8, k}, v = {sizeof(val), val};
        int rc = mdb_put(txn, dbi, &key, &v, 0);
        if (rc)
            return vc_store_err(rc);
    }
    return 0;
}

static int count(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    MDB_stat st;
    mdb_stat(txn, dbi, &st);
    *(size_t *)arg = st.ms_entries;
    return 0;
}

static int fail_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    MDB_val k = {3, "abc"}, v = {3, "def"};
    mdb_put(txn, dbi, &k, &v, 0);
    return -VC_ERR_CONFIG; /* the write must not be committed */
}

/* One write of the crash test: the counter and a batch of 4 KB values,
 * each stamped with the same counter, so a torn write would show. */
#define BATCH 50
static int put_batch(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    uint64_t n = *(uint64_t *)arg;
    char val[4096];
    memset(val, 'v', sizeof(val));
    memcpy(val, &n, sizeof(n));
    for (int i = 0; i < BATCH; i++) {
        unsigned char k[8];
        vc_store_u64_key((uint64_t)i, k);
        MDB_val key = {8, k}, v = {sizeof(val), val};
        int rc = mdb_put(txn, dbi, &key, &v, 0);
        if (rc)
            return vc_store_err(rc);
    }
    MDB_val key = {7, "counter"}, v = {sizeof(n), &n};
    return vc_store_err(mdb_put(txn, dbi, &key, &v, 0));
}

typedef struct batch_check {
    uint64_t counter;
    int torn;
} batch_check_t;

static int check_batch(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    batch_check_t *c = arg;
    MDB_val key = {7, "counter"}, v;
    if (mdb_get(txn, dbi, &key, &v) != 0 || v.mv_size != 8)
        return -VC_ERR_NOTFOUND;
    memcpy(&c->counter, v.mv_data, 8);
    for (int i = 0; i < BATCH; i++) {
        unsigned char k[8];
        vc_store_u64_key((uint64_t)i, k);
        MDB_val bk = {8, k}, bv;
        uint64_t stamp = 0;
        if (mdb_get(txn, dbi, &bk, &bv) != 0 || bv.mv_size != 4096)
            c->torn = 1;
        else if (memcpy(&stamp, bv.mv_data, 8), stamp != c->counter)
            c->torn = 1;
    }
    return 0;
}

/* kill -9 of a writer in the middle of its writes and of a reader inside
 * its transaction: the store opens clean with the writer's last commit,
 * the dead reader's slot is cleared, and writing goes on. */
static void crash_test(const char *dir)
{
    int commits[2], holding[2];
    CHECK(pipe(commits) == 0 && pipe(holding) == 0);
    pid_t writer = fork();
    if (writer == 0) {
        char err[256];
        vc_store_t *st = vc_store_open(dir, 1 << 20, err, sizeof(err));
        for (uint64_t n = 1; st; n++)
            if (vc_store_write(st, "crash", put_batch, &n) == 0 && write(commits[1], &n, sizeof(n)) < 0)
                _exit(1);
        _exit(1);
    }
    /* Let some commits land so the reader has something to pin. */
    uint64_t last = 0;
    while (last < 20 && read(commits[0], &last, sizeof(last)) == sizeof(last))
        ;
    pid_t reader = fork();
    if (reader == 0) {
        char err[256];
        vc_store_t *st = vc_store_open(dir, 1 << 20, err, sizeof(err));
        MDB_txn *txn;
        if (st == NULL || mdb_txn_begin(vc_store_env(st), NULL, MDB_RDONLY, &txn) != 0)
            _exit(1);
        if (write(holding[1], "r", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    char c;
    CHECK(read(holding[0], &c, 1) == 1);
    /* Another process keeps the store open, as the other daemons do: LMDB
     * resets its reader table only when the last user closes it. */
    char err[256] = "";
    vc_store_t *st = vc_store_open(dir, 1 << 20, err, sizeof(err));
    if (st == NULL) {
        fprintf(stderr, "vc_store_open: %s\n", err);
        kill(writer, SIGKILL);
        kill(reader, SIGKILL);
        waitpid(writer, NULL, 0);
        waitpid(reader, NULL, 0);
    }
    CHECK(st != NULL);
    if (st == NULL)
        return;
    /* Kill the writer at a moment of its choosing: somewhere inside a
     * write transaction most of the time (a batch is 200 KB). */
    for (int i = 0; i < 30; i++)
        if (read(commits[0], &last, sizeof(last)) != sizeof(last))
            break;
    usleep(300);
    kill(writer, SIGKILL);
    kill(reader, SIGKILL);
    waitpid(writer, NULL, 0);
    waitpid(reader, NULL, 0);
    /* Commits reported before the kill are all there. */
    fcntl(commits[0], F_SETFL, O_NONBLOCK);
    while (read(commits[0], &last, sizeof(last)) == sizeof(last))
        ;
    close(commits[0]);
    close(commits[1]);
    close(holding[0]);
    close(holding[1]);

    /* The dead reader's slot is found and cleared (what vc_store_open
     * does for a restarted daemon), once. */
    int dead = -1;
    CHECK(mdb_reader_check(vc_store_env(st), &dead) == 0 && dead == 1);
    CHECK(mdb_reader_check(vc_store_env(st), &dead) == 0 && dead == 0);
    batch_check_t bc = {0, 0};
    CHECK(vc_store_read(st, "crash", check_batch, &bc) == 0);
    CHECK(!bc.torn);
    CHECK(bc.counter >= last && bc.counter <= last + 1);
    /* The dead writer's lock is released: writing goes on. */
    uint64_t next = bc.counter + 1;
    CHECK(vc_store_write(st, "crash", put_batch, &next) == 0);
    CHECK(vc_store_read(st, "crash", check_batch, &bc) == 0 && bc.counter == next && !bc.torn);
    vc_store_destroy(&st);
}

/* The daemons of a suite open a new store at once (vc alone, a pod): the
 * one that creates data.mdb writes its first pages while the others look
 * at it, and none may take the file it sees empty for a damaged one. */
static void first_open_race(void)
{
    enum { ROUNDS = 100, OPENERS = 4 };
    int refused = 0;
    for (int round = 0; round < ROUNDS && !refused; round++) {
        char *dir = vc_test_tmpdir();
        pid_t kids[OPENERS];
        for (int i = 0; i < OPENERS; i++)
            if ((kids[i] = fork()) == 0) {
                char err[512] = "";
                vc_store_t *st = vc_store_open(dir, 1 << 20, err, sizeof(err));
                if (st == NULL)
                    fprintf(stderr, "round %d, opener %d: %s\n", round, i, err);
                _exit(st ? 0 : 1);
            }
        for (int i = 0; i < OPENERS; i++) {
            int status = 0;
            waitpid(kids[i], &status, 0);
            refused += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        }
        vc_test_rmtree(dir);
        free(dir);
    }
    CHECK(refused == 0);
}

int main(void)
{
    char *dir = vc_test_tmpdir();
    char err[256] = "";
    unsigned char k[8];
    vc_store_u64_key(0x0102030405060708ULL, k);
    CHECK(k[0] == 1 && k[7] == 8);
    CHECK(vc_store_u64_from_key(k) == 0x0102030405060708ULL);

    /* A 1 MiB map fills after ~250 values of 4 KB: it must grow. */
    vc_store_t *st = vc_store_open(dir, 1 << 20, err, sizeof(err));
    CHECK(st != NULL);
    for (int round = 0; round < 10; round++)
        CHECK(vc_store_write(st, "test", put_many, &round) == 0);
    size_t n = 0;
    CHECK(vc_store_read(st, "test", count, &n) == 0);
    CHECK(n == 1000);
    MDB_envinfo info;
    mdb_env_info(vc_store_env(st), &info);
    CHECK(info.me_mapsize > (1 << 20));

    /* A failing write leaves nothing behind. */
    CHECK(vc_store_write(st, "other", fail_fn, NULL) == -VC_ERR_CONFIG);
    CHECK(vc_store_read(st, "other", count, &n) == -VC_ERR_NOTFOUND);
    /* Reading a database nobody wrote: not found, not created. */
    CHECK(vc_store_read(st, "never", count, &n) == -VC_ERR_NOTFOUND);

    /* A second handle (another process would do the same) sees it all,
     * even opened with a smaller map than the file has grown to. */
    vc_store_t *st2 = vc_store_open(dir, 1 << 20, err, sizeof(err));
    CHECK(st2 != NULL);
    n = 0;
    CHECK(vc_store_read(st2, "test", count, &n) == 0 && n == 1000);
    vc_store_destroy(&st2);
    vc_store_destroy(&st);
    CHECK(st == NULL);

    /* A store from a newer schema is refused with a reason. */
    {
        st = vc_store_open(dir, 1 << 20, err, sizeof(err));
        MDB_txn *txn;
        MDB_dbi dbi;
        mdb_txn_begin(vc_store_env(st), NULL, 0, &txn);
        mdb_dbi_open(txn, VC_DB_META, 0, &dbi);
        unsigned char nine[8];
        vc_store_u64_key(99, nine);
        MDB_val key = {6, "schema"}, v = {8, nine};
        mdb_put(txn, dbi, &key, &v, 0);
        mdb_txn_commit(txn);
        vc_store_destroy(&st);
        CHECK(vc_store_open(dir, 1 << 20, err, sizeof(err)) == NULL);
        CHECK_CONTAINS(err, "schema 99");
    }
    {
        char *cdir = vc_test_tmpdir();
        crash_test(cdir);
        vc_test_rmtree(cdir);
        free(cdir);
    }
    first_open_race();
    /* An empty data file (a store cut to nothing) is refused, not read as
     * a new store. */
    {
        char *edir = vc_test_tmpdir();
        char *data = vc_asprintf("%s/data.mdb", edir);
        int fd = open(data, O_CREAT | O_WRONLY, 0600);
        CHECK(fd >= 0);
        close(fd);
        CHECK(vc_store_open(edir, 1 << 20, err, sizeof(err)) == NULL);
        CHECK_CONTAINS(err, "is empty (damaged)");
        vc_test_rmtree(edir);
        free(data);
        free(edir);
    }
    /* A directory that cannot be made: an error, not a crash. */
    CHECK(vc_store_open("/proc/no/such/dir", 1 << 20, err, sizeof(err)) == NULL);
    CHECK_CONTAINS(err, "failed while opening the state store");
    vc_test_rmtree(dir);
    free(dir);
    return vc_test_result("vc_store");
}
