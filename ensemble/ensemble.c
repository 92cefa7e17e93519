/* Ensembles: N members of one System on a pool of threads.
 *
 * The thread that calls run is the coordinator: it takes member indices from
 * a driver (a counter for a plain run, rank 0 for MPI) into a small work
 * queue, and hands finished members' records back to the driver. Workers
 * take members from the work queue, run them (copy the default State, init,
 * a fresh integrator from t = 0 to t_final), pack the result into a record and
 * put it in a small done queue. Both queues hold a few entries per worker, so
 * memory does not grow with the number of members. Each member starts from
 * the same State and a fresh integrator, so its result does not depend on the
 * thread it ran on or on what ran before it there. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mbk/alloc.h"
#include "mbk/ensemble.h"
#include "mbk/status.h"

#define ENS_MSG 512

typedef struct ens_worker ens_worker;

struct mbk_ensemble {
    const mbk_system *sys;
    int n;                       /* members */
    int threads;                 /* requested: 0 = all cores */
    char integrator[32];         /* the short name ("rkmerson") */
    double accuracy;
    mbk_integrator_setup_fn setup;
    void *setup_user;
    int n_run, n_failed;         /* of the last run */
    unsigned char *skip;         /* bit per member: not to run (NULL: none skipped) */
    int n_skipped;
};

/* One run: the shared queues and what the workers need. */
typedef struct ens_run {
    mbk_ensemble *e;
    double t_final;
    size_t record_size;
    mbk_member_init_fn init;
    mbk_member_pack_fn pack;
    void *user;
    mbk_state *template_state;   /* the default State at Instance, copied by every member */

    pthread_mutex_t lock;
    pthread_cond_t work_cv;      /* workers: a member to run, or stop */
    pthread_cond_t coord_cv;     /* coordinator: room in the work queue, or a record */
    pthread_cond_t space_cv;     /* workers: room in the done queue */
    int *work;                   /* ring of member indices */
    int work_cap, work_head, work_count;
    unsigned char *done_rec;     /* ring of records */
    int *done_member, *done_status;
    int done_cap, done_head, done_count;
    int in_flight;               /* taken by workers, not yet in the done queue */
    bool stop;                   /* no more work will come: workers leave when the queue is empty */
    int fatal;                   /* a worker's failure that ends the run (out of memory, pack aborted) */
    char fatal_msg[ENS_MSG];
} ens_run;

struct ens_worker {
    ens_run *run;
    pthread_t thread;
    bool started;
    mbk_state *s;                /* the member's initial State */
    mbk_integrator *ig;          /* the member's integrator (during its pack call) */
    unsigned char *record;       /* record_size bytes */
    int member;                  /* the member being run, -1 between members */
    bool initial_ok;             /* s realized to Velocity */
};

/* The worker running on this thread (for the per-member queries from pack/done). */
static _Thread_local ens_worker *tls_worker;

/* ------------------------------------------------------------------ */
/* Settings                                                             */
/* ------------------------------------------------------------------ */

mbk_ensemble *mbk_ensemble_create(const mbk_system *sys, int n_members)
{
    if (!sys) {
        mbk_set_error(MBK_EINVAL, "mbk_ensemble_create: the System is NULL");
        return NULL;
    }
    if (n_members <= 0) {
        mbk_set_error(MBK_EINVAL, "mbk_ensemble_create: %d members; an ensemble needs at least one", n_members);
        return NULL;
    }
    if (!mbk_system_is_topology_realized(sys)) {
        mbk_set_error(MBK_ESTAGE, "mbk_ensemble_create: realize the System's topology first "
                                  "(mbk_system_realize_topology)");
        return NULL;
    }
    mbk_ensemble *e = mbk_calloc(1, sizeof *e);
    if (!e) return NULL;
    e->sys = sys;
    e->n = n_members;
    e->accuracy = 1e-3;
    snprintf(e->integrator, sizeof e->integrator, "rkmerson");
    return e;
}

void mbk_ensemble_destroy(mbk_ensemble *e)
{
    if (!e) return;
    mbk_free(e->skip);
    mbk_free(e);
}

int mbk_ensemble_skip_member(mbk_ensemble *e, int member)
{
    const char *fn = "mbk_ensemble_skip_member";
    if (!e) return mbk_set_error(MBK_EINVAL, "%s: ensemble is NULL", fn);
    if (member < 0 || member >= e->n)
        return mbk_set_error(MBK_EINVAL, "%s: member %d does not exist; there are %d", fn, member, e->n);
    if (!e->skip && !(e->skip = mbk_calloc((size_t)e->n / 8 + 1, 1))) return MBK_ENOMEM;
    unsigned char bit = (unsigned char)(1u << (member % 8));
    if (!(e->skip[member / 8] & bit)) e->n_skipped++;
    e->skip[member / 8] |= bit;
    return MBK_OK;
}

bool mbk_ensemble_is_skipped(const mbk_ensemble *e, int member)
{
    return e && e->skip && member >= 0 && member < e->n && (e->skip[member / 8] >> (member % 8)) & 1u;
}

int mbk_ensemble_get_num_skipped(const mbk_ensemble *e) { return e ? e->n_skipped : 0; }

int mbk_ensemble_set_result_counts(mbk_ensemble *e, int n_run, int n_failed)
{
    if (!e) return mbk_set_error(MBK_EINVAL, "mbk_ensemble_set_result_counts: ensemble is NULL");
    e->n_run = n_run;
    e->n_failed = n_failed;
    return MBK_OK;
}

int mbk_ensemble_set_integrator(mbk_ensemble *e, const char *name, double accuracy)
{
    const char *fn = "mbk_ensemble_set_integrator";
    if (!e || !name) return mbk_set_error(MBK_EINVAL, "%s: ensemble and name must not be NULL", fn);
    if (!(accuracy > 0 && accuracy < 1))
        return mbk_set_error(MBK_EINVAL, "%s: accuracy %g must be in (0, 1)", fn, accuracy);
    const char *known = mbk_integrator_find_name(name);
    if (!known) return mbk_set_error(MBK_EINVAL, "%s: %s", fn, mbk_last_error());
    snprintf(e->integrator, sizeof e->integrator, "%s", known);
    e->accuracy = accuracy;
    return MBK_OK;
}

int mbk_ensemble_set_integrator_setup(mbk_ensemble *e, mbk_integrator_setup_fn setup, void *user)
{
    if (!e) return mbk_set_error(MBK_EINVAL, "mbk_ensemble_set_integrator_setup: ensemble is NULL");
    e->setup = setup;
    e->setup_user = user;
    return MBK_OK;
}

int mbk_ensemble_set_threads(mbk_ensemble *e, int n_threads)
{
    if (!e) return mbk_set_error(MBK_EINVAL, "mbk_ensemble_set_threads: ensemble is NULL");
    if (n_threads < 0 || n_threads > 4096)
        return mbk_set_error(MBK_EINVAL, "mbk_ensemble_set_threads: %d threads; give 0 (all cores) to 4096",
                             n_threads);
    e->threads = n_threads;
    return MBK_OK;
}

int mbk_ensemble_get_threads(const mbk_ensemble *e)
{
    if (!e) return mbk_set_error(MBK_EINVAL, "mbk_ensemble_get_threads: ensemble is NULL");
    long n = e->threads;
    if (n == 0) {
        n = sysconf(_SC_NPROCESSORS_ONLN);
        if (n < 1) n = 1;
    }
    return (int)(n < e->n ? n : e->n);
}

int mbk_ensemble_get_num_members(const mbk_ensemble *e) { return e ? e->n : 0; }
int mbk_ensemble_get_num_run(const mbk_ensemble *e) { return e ? e->n_run : 0; }
int mbk_ensemble_get_num_failed(const mbk_ensemble *e) { return e ? e->n_failed : 0; }

int mbk_ensemble_get_member_stats(const mbk_ensemble *e, int member, mbk_integrator_stats *stats)
{
    const char *fn = "mbk_ensemble_get_member_stats";
    if (!stats) return mbk_set_error(MBK_EINVAL, "%s: stats is NULL", fn);
    ens_worker *w = tls_worker;
    if (!e || !w || w->run->e != e || w->member != member)
        return mbk_set_error(MBK_EINVAL, "%s: member %d is not being reported on this thread; call it from "
                             "the member's done or pack callback", fn, member);
    mbk_integrator_get_stats(w->ig, stats); /* zeros when NULL */
    return MBK_OK;
}

const mbk_state *mbk_ensemble_get_member_initial_state(const mbk_ensemble *e, int member)
{
    ens_worker *w = tls_worker;
    if (!e || !w || w->run->e != e || w->member != member) {
        mbk_set_error(MBK_EINVAL, "mbk_ensemble_get_member_initial_state: member %d is not being reported on "
                      "this thread; call it from the member's done or pack callback", member);
        return NULL;
    }
    return w->initial_ok ? w->s : NULL;
}

/* ------------------------------------------------------------------ */
/* One member                                                           */
/* ------------------------------------------------------------------ */

/* Run member i on worker w; returns its status and leaves its message in msg. */
static int run_member(ens_worker *w, int i, const mbk_state **final, char *msg)
{
    ens_run *r = w->run;
    const mbk_ensemble *e = r->e;
    const mbk_system *sys = e->sys;
    int rc;
    msg[0] = '\0';
    *final = w->s;
    w->initial_ok = false;
    mbk_clear_error();
    if ((rc = mbk_state_copy(w->s, r->template_state)) < 0) goto failed;
    rc = r->init ? r->init(r->user, sys, i, w->s) : 0;
    if (rc != 0) {
        int st = mbk_last_status();
        if (rc > 0 || st >= 0) {
            snprintf(msg, ENS_MSG, "the member's init callback returned %d%s%s", rc, mbk_last_error()[0] ? ": " : "",
                     mbk_last_error());
            return rc < 0 ? rc : MBK_EUSER;
        }
        goto failed;
    }
    if ((rc = mbk_system_realize(sys, w->s, MBK_STAGE_VELOCITY)) < 0) goto failed;
    w->initial_ok = true;
    w->ig = mbk_integrator_create_by_name(sys, e->integrator);
    if (!w->ig) {
        rc = mbk_last_status() < 0 ? mbk_last_status() : MBK_ENOMEM;
        goto failed;
    }
    if ((rc = mbk_integrator_set_accuracy(w->ig, e->accuracy)) < 0) goto failed;
    if (e->setup && (rc = e->setup(e->setup_user, w->ig)) != 0) {
        if (rc > 0 || mbk_last_status() >= 0) {
            snprintf(msg, ENS_MSG, "the integrator setup callback returned %d", rc);
            return MBK_EUSER;
        }
        goto failed;
    }
    if ((rc = mbk_integrator_initialize(w->ig, w->s)) < 0) goto failed;
    *final = mbk_integrator_get_state(w->ig);
    rc = mbk_integrator_integrate(w->ig, r->t_final, NULL, NULL);
    *final = mbk_integrator_get_state(w->ig);
    if (rc >= 0) return rc == MBK_TERMINATED ? MBK_TERMINATED : MBK_OK;
failed:
    if (mbk_last_status() < 0) rc = mbk_last_status();
    snprintf(msg, ENS_MSG, "%s", mbk_last_error()[0] ? mbk_last_error() : mbk_status_name(rc));
    return rc < 0 ? rc : MBK_EUSER;
}

/* ------------------------------------------------------------------ */
/* Workers                                                              */
/* ------------------------------------------------------------------ */

static void set_fatal(ens_run *r, int status, const char *fmt, const char *what)
{
    /* under the lock */
    if (r->fatal) return;
    r->fatal = status;
    snprintf(r->fatal_msg, sizeof r->fatal_msg, fmt, what);
    pthread_cond_broadcast(&r->work_cv);
    pthread_cond_broadcast(&r->space_cv);
    pthread_cond_signal(&r->coord_cv);
}

/* A pack or done callback for `member` returned prc: its own status and message when it
   set them (the member's own failure was the last error while it ran), else MBK_EUSER;
   what: "prc (member i)" and the message. */
static int callback_failure(int prc, int member, int member_status, const char *member_msg, char *what, size_t n)
{
    const int st = mbk_last_status();
    const bool own = st < 0 && !(st == member_status && !strcmp(mbk_last_error(), member_msg));
    snprintf(what, n, "%d (member %d)%s%.360s", prc, member, own ? ": " : "", own ? mbk_last_error() : "");
    return own ? st : MBK_EUSER;
}

static void *worker_main(void *arg)
{
    ens_worker *w = arg;
    ens_run *r = w->run;
    tls_worker = w;
    char msg[ENS_MSG];
    for (;;) {
        pthread_mutex_lock(&r->lock);
        while (r->work_count == 0 && !r->stop && !r->fatal) pthread_cond_wait(&r->work_cv, &r->lock);
        if (r->fatal || (r->work_count == 0 && r->stop)) {
            pthread_mutex_unlock(&r->lock);
            break;
        }
        int i = r->work[r->work_head];
        r->work_head = (r->work_head + 1) % r->work_cap;
        r->work_count--;
        r->in_flight++;
        pthread_cond_signal(&r->coord_cv);
        pthread_mutex_unlock(&r->lock);

        const mbk_state *final = NULL;
        w->member = i;
        int status = run_member(w, i, &final, msg);
        memset(w->record, 0, r->record_size);
        int prc = 0;
        if (r->pack) {
            /* the member's message is the last error while it is reported */
            if (status < 0) mbk_set_error(status, "%s", msg);
            else mbk_clear_error();
            prc = r->pack(r->user, r->e->sys, i, final, status, w->record, r->record_size);
        }
        mbk_integrator_destroy(w->ig);
        w->ig = NULL;
        w->member = -1;

        char what[400];
        const int pst = prc != 0 ? callback_failure(prc, i, status, msg, what, sizeof what) : MBK_OK;

        pthread_mutex_lock(&r->lock);
        r->e->n_run++; /* its result went to the callback, whatever becomes of the record */
        if (status < 0) r->e->n_failed++;
        if (prc != 0) set_fatal(r, pst, "the ensemble's result callback returned %s; the run stops", what);
        while (r->done_count == r->done_cap && !r->fatal) pthread_cond_wait(&r->space_cv, &r->lock);
        if (!r->fatal) {
            int slot = (r->done_head + r->done_count) % r->done_cap;
            memcpy(r->done_rec + (size_t)slot * r->record_size, w->record, r->record_size);
            r->done_member[slot] = i;
            r->done_status[slot] = status;
            r->done_count++;
        }
        r->in_flight--;
        pthread_cond_signal(&r->coord_cv);
        pthread_mutex_unlock(&r->lock);
    }
    tls_worker = NULL;
    return NULL;
}

/* ------------------------------------------------------------------ */
/* The coordinator                                                      */
/* ------------------------------------------------------------------ */

static void free_run(ens_run *r, ens_worker *w, int nw)
{
    for (int k = 0; w && k < nw; ++k) {
        mbk_state_destroy(w[k].s);
        mbk_free(w[k].record);
    }
    mbk_free(w);
    mbk_free(r->work);
    mbk_free(r->done_rec);
    mbk_free(r->done_member);
    mbk_free(r->done_status);
    mbk_state_destroy(r->template_state);
}

static void deadline_in(struct timespec *ts, double seconds)
{
    clock_gettime(CLOCK_REALTIME, ts);
    long ns = ts->tv_nsec + (long)(seconds * 1e9);
    ts->tv_sec += ns / 1000000000L;
    ts->tv_nsec = ns % 1000000000L;
}

/* A run's queues, workers' States and records, and the template State at Instance;
   w: nw workers (not started). Returns MBK_OK or a status with the message set (and
   everything freed). */
static int prepare_run(ens_run *r, ens_worker **w, int nw, const char *fn)
{
    r->work_cap = 2 * nw, r->done_cap = 2 * nw;
    *w = mbk_calloc((size_t)nw, sizeof **w);
    r->work = mbk_calloc((size_t)r->work_cap, sizeof *r->work);
    r->done_rec = mbk_calloc((size_t)r->done_cap, r->record_size);
    r->done_member = mbk_calloc((size_t)r->done_cap, sizeof(int));
    r->done_status = mbk_calloc((size_t)r->done_cap, sizeof(int));
    r->template_state = mbk_state_create();
    if (!*w || !r->work || !r->done_rec || !r->done_member || !r->done_status || !r->template_state) {
        free_run(r, *w, *w ? nw : 0);
        return mbk_set_error(MBK_ENOMEM, "%s: out of memory for %d threads", fn, nw);
    }
    int rc;
    if ((rc = mbk_state_init(r->template_state, r->e->sys)) < 0 ||
        (rc = mbk_system_realize(r->e->sys, r->template_state, MBK_STAGE_INSTANCE)) < 0) {
        int st = mbk_last_status();
        char why[ENS_MSG];
        snprintf(why, sizeof why, "%s", mbk_last_error());
        free_run(r, *w, nw);
        return mbk_set_error(st < 0 ? st : rc, "%s: the default State cannot be realized to Instance: %s", fn, why);
    }
    for (int k = 0; k < nw; ++k) {
        (*w)[k].run = r;
        (*w)[k].member = -1;
        (*w)[k].s = mbk_state_create();
        (*w)[k].record = mbk_calloc(1, r->record_size);
        if (!(*w)[k].s || !(*w)[k].record) {
            free_run(r, *w, nw);
            return mbk_set_error(MBK_ENOMEM, "%s: out of memory for %d threads", fn, nw);
        }
    }
    return MBK_OK;
}

/* The coordinator's state between its steps (it holds r->lock except where a step
   says it releases it). */
typedef struct ens_coord {
    ens_run *r;
    mbk_ensemble *e;
    const mbk_ensemble_driver *driver;
    void *driver_data;
    size_t record_size; /* as the caller gave it (r->record_size is at least 1) */
    unsigned char *rec; /* the record being delivered */
    int *want;          /* the members the driver gives, work_cap of them */
    bool exhausted;     /* the driver has no more members to give */
    const char *fn;     /* the public function, for messages */
} ens_coord;

/* The driver's status after a callback of its returned nonzero. */
static int driver_status(void) { return mbk_last_status() < 0 ? mbk_last_status() : MBK_EUSER; }

/* Every finished record to the driver (the lock released around each delivery):
   they free the workers' slots. */
static int deliver_records(ens_coord *k, bool *progressed)
{
    ens_run *r = k->r;
    while (r->done_count > 0) {
        int slot = r->done_head, member = r->done_member[slot], status = r->done_status[slot];
        memcpy(k->rec, r->done_rec + (size_t)slot * r->record_size, r->record_size);
        r->done_head = (r->done_head + 1) % r->done_cap;
        r->done_count--;
        pthread_cond_signal(&r->space_cv);
        pthread_mutex_unlock(&r->lock);
        int drc = k->driver->deliver(k->driver_data, member, status, k->rec, k->record_size);
        int rc = drc != 0 ? driver_status() : MBK_OK;
        if (drc != 0 && mbk_last_status() >= 0)
            mbk_set_error(MBK_EUSER, "%s: the result callback returned %d for member %d; the run stops", k->fn,
                          drc, member);
        pthread_mutex_lock(&r->lock);
        *progressed = true;
        if (rc != MBK_OK) return rc;
    }
    return MBK_OK;
}

/* More members from the driver into the work queue while it has room (the lock
   released around the fetch); a negative count: the driver has no more. */
static int fetch_work(ens_coord *k, bool *progressed)
{
    ens_run *r = k->r;
    const int room = r->work_cap - r->work_count;
    if (k->exhausted || room <= 0) return MBK_OK;
    pthread_mutex_unlock(&r->lock);
    int got = k->driver->fetch(k->driver_data, k->want, room);
    pthread_mutex_lock(&r->lock);
    if (got < 0) {
        k->exhausted = true;
        r->stop = true;
        pthread_cond_broadcast(&r->work_cv);
    }
    for (int i = 0; i < got && i < room; ++i) {
        if (k->want[i] < 0 || k->want[i] >= k->e->n)
            return mbk_set_error(MBK_EINVAL, "%s: the driver gave member %d; there are %d", k->fn, k->want[i],
                                 k->e->n);
        r->work[(r->work_head + r->work_count) % r->work_cap] = k->want[i];
        r->work_count++;
        pthread_cond_signal(&r->work_cv);
        *progressed = true;
    }
    return MBK_OK;
}

/* Wait up to `seconds` for the workers (coord_cv), then let the driver poll its
   communication (with poll: the lock released around it). */
static int wait_and_poll(ens_coord *k, double seconds, bool poll)
{
    ens_run *r = k->r;
    struct timespec ts;
    deadline_in(&ts, seconds);
    pthread_cond_timedwait(&r->coord_cv, &r->lock, &ts);
    if (!poll) return MBK_OK;
    pthread_mutex_unlock(&r->lock);
    int prc = k->driver->poll ? k->driver->poll(k->driver_data, 0.0) : 0;
    pthread_mutex_lock(&r->lock);
    return prc != 0 ? driver_status() : MBK_OK;
}

/* Keep the work queue filled and hand the records to the driver until it has no more
   members and says it is finished, or something fails. Called and returns with the
   lock held. */
static int coordinate(ens_coord *k)
{
    ens_run *r = k->r;
    int rc = MBK_OK;
    while (rc == MBK_OK && !r->fatal) {
        bool progressed = false;
        if ((rc = deliver_records(k, &progressed)) != MBK_OK) break;
        if ((rc = fetch_work(k, &progressed)) != MBK_OK) break;
        if (k->exhausted && r->work_count == 0 && r->in_flight == 0 && r->done_count == 0) {
            pthread_mutex_unlock(&r->lock);
            bool fin = !k->driver->finished || k->driver->finished(k->driver_data);
            pthread_mutex_lock(&r->lock);
            if (fin) break;
            /* the driver waits for others (rank 0 for the other ranks): poll every 2 ms */
            rc = wait_and_poll(k, 0.002, true);
            continue;
        }
        /* a record may have arrived while the lock was released for fetch or finished */
        if (progressed || r->done_count > 0) continue;
        /* wake for the workers or, every 2 ms, for the driver's communication; without
           it, every change the coordinator waits for signals coord_cv and the timeout is
           a safety net */
        rc = k->driver->poll ? wait_and_poll(k, 0.002, true) : wait_and_poll(k, 0.05, false);
    }
    return rc;
}

/* Started workers: stopped after their current member (rc: the run's status) and
   joined; the run's synchronization destroyed. Called with the lock held. */
static int finish_run(ens_run *r, ens_worker *w, int nw, int rc)
{
    if (rc == MBK_OK && r->fatal) rc = mbk_set_error(r->fatal, "%s", r->fatal_msg);
    if (rc != MBK_OK && !r->fatal) {
        r->fatal = rc; /* stop the workers after their current member */
        pthread_cond_broadcast(&r->work_cv);
        pthread_cond_broadcast(&r->space_cv);
    }
    r->stop = true;
    pthread_cond_broadcast(&r->work_cv);
    pthread_mutex_unlock(&r->lock);
    for (int k = 0; k < nw; ++k)
        if (w[k].started) pthread_join(w[k].thread, NULL);
    pthread_cond_destroy(&r->space_cv);
    pthread_cond_destroy(&r->coord_cv);
    pthread_cond_destroy(&r->work_cv);
    pthread_mutex_destroy(&r->lock);
    return rc;
}

int mbk_ensemble_run_driver(mbk_ensemble *e, double t_final, size_t record_size, mbk_member_init_fn init,
                            mbk_member_pack_fn pack, const mbk_ensemble_driver *driver, void *driver_data,
                            void *user)
{
    const char *fn = "mbk_ensemble_run";
    if (!e) return mbk_set_error(MBK_EINVAL, "%s: ensemble is NULL", fn);
    if (!(t_final > 0) || !isfinite(t_final))
        return mbk_set_error(MBK_EINVAL, "%s: t_final = %g; give a finite time > 0", fn, t_final);
    if (!driver || !driver->fetch || !driver->deliver)
        return mbk_set_error(MBK_EINVAL, "%s: the driver needs fetch and deliver", fn);
    if (record_size > ((size_t)1 << 24))
        return mbk_set_error(MBK_EINVAL, "%s: records of %zu bytes; keep them under 16 MiB", fn, record_size);
    e->n_run = e->n_failed = 0;
    const int nw = mbk_ensemble_get_threads(e);
    ens_run r;
    memset(&r, 0, sizeof r);
    r.e = e, r.t_final = t_final, r.record_size = record_size ? record_size : 1;
    r.init = init, r.pack = pack, r.user = user;
    ens_worker *w = NULL;
    int rc = prepare_run(&r, &w, nw, fn);
    if (rc < 0) return rc;
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.work_cv, NULL);
    pthread_cond_init(&r.coord_cv, NULL);
    pthread_cond_init(&r.space_cv, NULL);
    int started = 0;
    for (int k = 0; k < nw; ++k) {
        if (pthread_create(&w[k].thread, NULL, worker_main, &w[k]) != 0) break;
        w[k].started = true;
        ++started;
    }
    if (started == 0) {
        rc = mbk_set_error(MBK_ENOMEM, "%s: no worker thread could be started (%s)", fn, strerror(errno));
        pthread_mutex_lock(&r.lock);
        r.stop = true;
        pthread_mutex_unlock(&r.lock);
    }
    ens_coord k = {&r, e, driver, driver_data, record_size, NULL, NULL, false, fn};
    k.rec = rc == MBK_OK ? mbk_malloc(r.record_size) : NULL;
    if (rc == MBK_OK && !k.rec) rc = mbk_set_error(MBK_ENOMEM, "%s: out of memory", fn);
    k.want = rc == MBK_OK ? mbk_calloc((size_t)r.work_cap, sizeof(int)) : NULL;
    if (rc == MBK_OK && !k.want) rc = mbk_set_error(MBK_ENOMEM, "%s: out of memory", fn);
    pthread_mutex_lock(&r.lock);
    if (rc == MBK_OK) rc = coordinate(&k);
    rc = finish_run(&r, w, nw, rc);
    mbk_free(k.want);
    mbk_free(k.rec);
    free_run(&r, w, nw);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Plain runs: members 0..n-1 from a counter                            */
/* ------------------------------------------------------------------ */

typedef struct local_driver {
    const mbk_ensemble *e;
    int next, n;
    mbk_member_collect_fn collect;
    mbk_member_done_fn done;
    void *user;
} local_driver;

static int local_fetch(void *d, int *members, int cap)
{
    local_driver *l = d;
    while (l->next < l->n && mbk_ensemble_is_skipped(l->e, l->next)) l->next++;
    if (l->next >= l->n) return -1;
    int k = 0;
    while (k < cap && l->next < l->n) {
        if (!mbk_ensemble_is_skipped(l->e, l->next)) members[k++] = l->next;
        l->next++;
    }
    return k;
}

static int local_deliver(void *d, int member, int status, const void *record, size_t size)
{
    local_driver *l = d;
    return l->collect ? l->collect(l->user, member, status, record, size) : 0;
}

int mbk_ensemble_run_records(mbk_ensemble *e, double t_final, size_t record_size, mbk_member_init_fn init,
                             mbk_member_pack_fn pack, mbk_member_collect_fn collect, void *user)
{
    if (!e) return mbk_set_error(MBK_EINVAL, "mbk_ensemble_run_records: ensemble is NULL");
    local_driver l = {e, 0, e->n, collect, NULL, user};
    const mbk_ensemble_driver d = {local_fetch, local_deliver, NULL, NULL};
    return mbk_ensemble_run_driver(e, t_final, record_size, init, pack, &d, &l, user);
}

/* done callbacks through the record machinery: the record carries nothing */
typedef struct done_adapter {
    mbk_member_done_fn done;
    void *user;
} done_adapter;

static int done_pack(void *user, const mbk_system *sys, int member, const mbk_state *s, int status, void *record,
                     size_t size)
{
    (void)record, (void)size;
    const done_adapter *a = user;
    return a->done ? a->done(a->user, sys, member, s, status) : 0;
}

typedef struct init_adapter {
    mbk_member_init_fn init;
    done_adapter done;
} init_adapter;

static int adapter_init(void *user, const mbk_system *sys, int member, mbk_state *s)
{
    const init_adapter *a = user;
    return a->init ? a->init(a->done.user, sys, member, s) : 0;
}

static int adapter_pack(void *user, const mbk_system *sys, int member, const mbk_state *s, int status, void *record,
                        size_t size)
{
    const init_adapter *a = user;
    return done_pack((void *)&a->done, sys, member, s, status, record, size);
}

int mbk_ensemble_run(mbk_ensemble *e, double t_final, mbk_member_init_fn init, mbk_member_done_fn done, void *user)
{
    init_adapter a = {init, {done, user}};
    return mbk_ensemble_run_records(e, t_final, 0, adapter_init, adapter_pack, NULL, &a);
}
