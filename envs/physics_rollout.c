/* One rollout of envs/physics_sim.py's `simulate`, its space set-up and step loop in C.
 *
 * Why C: in ssup's candidate rollouts Chipmunk's own step was under half of the time; the rest was the Python
 * around it (building the space, the per-step hold count, the 0.1-s noise/sleep/leave pass), one cffi call per
 * Chipmunk call. This file makes the same Chipmunk calls, in the same order and with the same arithmetic, as
 * `physics_sim._build` and `physics_sim._run` (the Python reference, kept and tested equal rollout for rollout).
 *
 * It is not linked against Chipmunk: pymunk's compiled module holds Chipmunk, and `init` receives the address of
 * each function used (in the order of the Api struct, from `physics_sim._API_NAMES`), read through pymunk's
 * cffi. The struct layouts declared here (cpVect, cpTransform, cpCollisionHandler) are checked against pymunk's
 * own declarations before `init` is called. Compiled with -ffp-contract=off: no fused multiply-adds, so the
 * noise arithmetic rounds as Python's does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct { double x, y; } cpVect;
typedef struct { double a, b, c, d, tx, ty; } cpTransform;
typedef struct cpSpace cpSpace;
typedef struct cpBody cpBody;
typedef struct cpShape cpShape;
typedef struct cpArbiter cpArbiter;
typedef void (*cpCollisionFunc)(cpArbiter *, cpSpace *, void *);
typedef struct {
    uintptr_t typeA, typeB;
    cpCollisionFunc beginFunc, preSolveFunc, postSolveFunc, separateFunc;
    void *userData;
} cpCollisionHandler;

/* the order of physics_sim._API_NAMES */
typedef struct {
    cpSpace *(*SpaceNew)(void);
    void (*SpaceFree)(cpSpace *);
    void (*SpaceSetGravity)(cpSpace *, cpVect);
    void (*SpaceSetIterations)(cpSpace *, int);
    void (*SpaceSetSleepTimeThreshold)(cpSpace *, double);
    cpCollisionHandler *(*SpaceAddCollisionHandler)(cpSpace *, uintptr_t, uintptr_t);
    void (*SpaceStep)(cpSpace *, double);
    cpBody *(*SpaceAddBody)(cpSpace *, cpBody *);
    cpShape *(*SpaceAddShape)(cpSpace *, cpShape *);
    void (*SpaceRemoveBody)(cpSpace *, cpBody *);
    void (*SpaceRemoveShape)(cpSpace *, cpShape *);
    cpBody *(*BodyNew)(double, double);
    cpBody *(*BodyNewStatic)(void);
    void (*BodyFree)(cpBody *);
    void (*BodySetPosition)(cpBody *, cpVect);
    cpVect (*BodyGetPosition)(cpBody *);
    void (*BodySetAngle)(cpBody *, double);
    double (*BodyGetAngle)(cpBody *);
    cpVect (*BodyGetVelocity)(cpBody *);
    void (*BodySetVelocity)(cpBody *, cpVect);
    unsigned char (*BodyIsSleeping)(cpBody *);
    cpSpace *(*BodyGetSpace)(cpBody *);
    cpShape *(*CircleShapeNew)(cpBody *, double, cpVect);
    cpShape *(*PolyShapeNew)(cpBody *, int, const cpVect *, cpTransform, double);
    void (*ShapeFree)(cpShape *);
    void (*ShapeSetFriction)(cpShape *, double);
    void (*ShapeSetElasticity)(cpShape *, double);
    void (*ShapeSetCollisionType)(cpShape *, uintptr_t);
    void (*ShapeSetDensity)(cpShape *, double);
    cpSpace *(*ShapeGetSpace)(cpShape *);
    void (*ArbiterGetShapes)(const cpArbiter *, cpShape **, cpShape **);
} Api;

static Api api;
static int api_ready = 0;

#define MAX_BODIES 64
#define MAX_SHAPES 256
#define ROW 7   /* x, y, angle, dynamic, collision type (0 other, 1 goal, 2 target), density, shapes */
#define GEOM 9  /* kind (0 circle, 1 box), radius or the box's 4 vertices (x, y) in the body's frame */

typedef struct {
    int touching[MAX_BODIES]; /* contacts per goal body */
    int apart;                /* goal bodies touching no target */
    int n_goal_shapes;
    cpShape *goal_shape[MAX_SHAPES];
    int goal_of[MAX_SHAPES];
} Goals;

static int goal_index(Goals *g, cpShape *s) {
    for (int i = 0; i < g->n_goal_shapes; i++)
        if (g->goal_shape[i] == s) return g->goal_of[i];
    return -1;
}

static int arbiter_goal(cpArbiter *arb, Goals *g) {
    cpShape *a, *b;
    api.ArbiterGetShapes(arb, &a, &b);
    int i = goal_index(g, a);
    return i >= 0 ? i : goal_index(g, b);
}

static void on_begin(cpArbiter *arb, cpSpace *space, void *data) {
    Goals *g = (Goals *)data;
    int i = arbiter_goal(arb, g);
    g->touching[i] += 1;
    g->apart -= g->touching[i] == 1;
}

static void on_separate(cpArbiter *arb, cpSpace *space, void *data) {
    Goals *g = (Goals *)data;
    int i = arbiter_goal(arb, g);
    g->touching[i] -= 1;
    g->apart += g->touching[i] == 0;
}

static PyObject *init(PyObject *self, PyObject *args) {
    Py_buffer addr;
    if (!PyArg_ParseTuple(args, "y*", &addr)) return NULL;
    if ((size_t)addr.len != sizeof(Api)) {
        PyErr_Format(PyExc_ValueError, "init needs %zu bytes of function addresses, got %zd", sizeof(Api), addr.len);
        PyBuffer_Release(&addr);
        return NULL;
    }
    memcpy(&api, addr.buf, sizeof(Api));
    api_ready = 1;
    PyBuffer_Release(&addr);
    Py_RETURN_NONE;
}

static PyObject *layout(PyObject *self, PyObject *args) {
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:n,s:n}", "cpVect", (Py_ssize_t)sizeof(cpVect), "cpTransform",
                         (Py_ssize_t)sizeof(cpTransform), "cpCollisionHandler", (Py_ssize_t)sizeof(cpCollisionHandler),
                         "beginFunc", (Py_ssize_t)offsetof(cpCollisionHandler, beginFunc), "separateFunc",
                         (Py_ssize_t)offsetof(cpCollisionHandler, separateFunc), "userData",
                         (Py_ssize_t)offsetof(cpCollisionHandler, userData));
}

/* rollout(rows, geom, friction, elasticity, gravity, dt, noise, normals, n_steps, need, early, record, traj)
 *   -> (solved, steps, frames)  -- see physics_sim._simulate_c */
static PyObject *rollout(PyObject *self, PyObject *args) {
    Py_buffer rows_b, geom_b, z_b, traj_b;
    double friction, elasticity, gravity, dt, noise;
    int n_steps, need, early, record;
    if (!api_ready) {
        PyErr_SetString(PyExc_RuntimeError, "rollout before init: call init with Chipmunk's function addresses");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*y*dddddy*iiiiw*", &rows_b, &geom_b, &friction, &elasticity, &gravity, &dt, &noise,
                          &z_b, &n_steps, &need, &early, &record, &traj_b))
        return NULL;
    const double *rows = (const double *)rows_b.buf, *geom = (const double *)geom_b.buf, *z = (const double *)z_b.buf;
    double *traj = (double *)traj_b.buf;
    Py_ssize_t n = rows_b.len / (Py_ssize_t)(ROW * sizeof(double)), n_geom = geom_b.len / (Py_ssize_t)(GEOM * sizeof(double));
    Py_ssize_t n_z = z_b.len / (Py_ssize_t)sizeof(double), traj_cap = traj_b.len / (Py_ssize_t)sizeof(double);
    PyObject *result = NULL;
    if (n > MAX_BODIES || n_geom > MAX_SHAPES) {
        PyErr_Format(PyExc_ValueError, "a scene of %zd bodies and %zd shapes; at most %d and %d", n, n_geom,
                     MAX_BODIES, MAX_SHAPES);
        goto release;
    }

    cpBody *bodies[MAX_BODIES];
    cpShape *shapes[MAX_SHAPES];
    int first_shape[MAX_BODIES + 1], live[MAX_BODIES], n_live = 0, n_goals = 0, n_shapes = 0;
    Goals goals;
    memset(&goals, 0, sizeof goals);
    const cpTransform identity = {1.0, 0.0, 0.0, 1.0, 0.0, 0.0};

    int solved = 0, step = 0, frames = 0, held = 0, zi = 0, failed = 0;
    Py_BEGIN_ALLOW_THREADS
    cpSpace *sp = api.SpaceNew();
    api.SpaceSetGravity(sp, (cpVect){0.0, -gravity});
    api.SpaceSetIterations(sp, 10);
    api.SpaceSetSleepTimeThreshold(sp, 0.3);
    /* bodies and shapes: physics_sim._build's calls in its order */
    for (Py_ssize_t i = 0; i < n; i++) {
        const double *r = rows + i * ROW;
        int dynamic = r[3] != 0.0, ctype = (int)r[4], k = (int)r[6];
        cpBody *bp = dynamic ? api.BodyNew(0.0, 0.0) : api.BodyNewStatic();
        bodies[i] = bp;
        api.BodySetPosition(bp, (cpVect){r[0], r[1]});
        api.BodySetAngle(bp, r[2]);
        first_shape[i] = n_shapes;
        for (int j = 0; j < k; j++) {
            const double *g = geom + (Py_ssize_t)(n_shapes + j) * GEOM;
            cpShape *s;
            if (g[0] == 0.0) {
                s = api.CircleShapeNew(bp, g[1], (cpVect){0.0, 0.0});
            } else {
                cpVect v[4] = {{g[1], g[2]}, {g[3], g[4]}, {g[5], g[6]}, {g[7], g[8]}};
                s = api.PolyShapeNew(bp, 4, v, identity, 0.0);
            }
            shapes[n_shapes + j] = s;
            api.ShapeSetFriction(s, friction);
            api.ShapeSetElasticity(s, elasticity);
            api.ShapeSetCollisionType(s, (uintptr_t)ctype);
            if (dynamic) api.ShapeSetDensity(s, r[5]);
            if (ctype == 1) {
                goals.goal_shape[goals.n_goal_shapes] = s;
                goals.goal_of[goals.n_goal_shapes++] = n_goals;
            }
        }
        n_goals += ctype == 1;
        api.SpaceAddBody(sp, bp);
        for (int j = 0; j < k; j++) api.SpaceAddShape(sp, shapes[n_shapes + j]);
        n_shapes += k;
        if (dynamic) live[n_live++] = (int)i;
    }
    first_shape[n] = n_shapes;
    goals.apart = n_goals > 0 ? n_goals : 1;
    cpCollisionHandler *h = api.SpaceAddCollisionHandler(sp, 1, 2);
    h->beginFunc = on_begin;
    h->separateFunc = on_separate;
    h->userData = &goals;

    /* the step loop: physics_sim._run's */
    for (step = 1; step <= n_steps; step++) {
        if (record && (step - 1) % record == 0) {
            if ((Py_ssize_t)(frames + 1) * n * 3 > traj_cap) { failed = 1; break; }
            for (Py_ssize_t i = 0; i < n; i++) {
                cpVect q = api.BodyGetPosition(bodies[i]);
                double *f = traj + ((Py_ssize_t)frames * n + i) * 3;
                f[0] = q.x; f[1] = q.y; f[2] = api.BodyGetAngle(bodies[i]);
            }
            frames++;
        }
        api.SpaceStep(sp, dt);
        held = goals.apart ? 0 : held + 1;
        if (held >= need) { solved = 1; break; }
        if (early && held + (n_steps - step) < need) break;
        if (step % 6 == 0) {
            int rest = 1, gone[MAX_BODIES], n_gone = 0;
            for (int j = 0; j < n_live; j++) {
                cpBody *bp = bodies[live[j]];
                if (!api.BodyIsSleeping(bp)) {
                    rest = 0;
                    if (noise > 0.0) {
                        if (zi + 2 > n_z) { failed = 2; break; }
                        cpVect v = api.BodyGetVelocity(bp);
                        double sd = noise * pow(v.x * v.x + v.y * v.y, 0.5);
                        api.BodySetVelocity(bp, (cpVect){v.x + sd * z[zi], v.y + sd * z[zi + 1]});
                        zi += 2;
                    }
                }
                if (api.BodyGetPosition(bp).y < -1.0) gone[n_gone++] = j;
            }
            if (failed) break;
            if (n_gone) {
                for (int q = n_gone - 1; q >= 0; q--) {
                    int j = gone[q], b = live[j];
                    api.SpaceRemoveBody(sp, bodies[b]);
                    for (int s = first_shape[b]; s < first_shape[b + 1]; s++) api.SpaceRemoveShape(sp, shapes[s]);
                    memmove(live + j, live + j + 1, (size_t)(n_live - j - 1) * sizeof(int));
                    n_live--;
                }
                rest = 1;
                for (int j = 0; j < n_live; j++) rest &= api.BodyIsSleeping(bodies[live[j]]) != 0;
            }
            if (rest) {
                solved = !goals.apart && held + (n_steps - step) >= need;
                break;
            }
        }
    }
    if (step > n_steps) step = n_steps;
    if (record && !failed) {
        if ((Py_ssize_t)(frames + 1) * n * 3 > traj_cap) failed = 1;
        else {
            for (Py_ssize_t i = 0; i < n; i++) {
                cpVect q = api.BodyGetPosition(bodies[i]);
                double *f = traj + ((Py_ssize_t)frames * n + i) * 3;
                f[0] = q.x; f[1] = q.y; f[2] = api.BodyGetAngle(bodies[i]);
            }
            frames++;
        }
    }
    /* take everything out of the space (its separate callbacks may run) before freeing it */
    for (int s = 0; s < n_shapes; s++) {
        if (api.ShapeGetSpace(shapes[s]) != NULL) api.SpaceRemoveShape(sp, shapes[s]);
        api.ShapeFree(shapes[s]);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (api.BodyGetSpace(bodies[i]) != NULL) api.SpaceRemoveBody(sp, bodies[i]);
        api.BodyFree(bodies[i]);
    }
    api.SpaceFree(sp);
    Py_END_ALLOW_THREADS
    if (failed == 1) PyErr_SetString(PyExc_ValueError, "rollout: the trajectory buffer is too small");
    else if (failed == 2) PyErr_SetString(PyExc_ValueError, "rollout: too few noise normals");
    else result = Py_BuildValue("(iii)", solved, step, frames);
release:
    PyBuffer_Release(&rows_b);
    PyBuffer_Release(&geom_b);
    PyBuffer_Release(&z_b);
    PyBuffer_Release(&traj_b);
    return result;
}

static PyMethodDef methods[] = {
    {"init", init, METH_VARARGS, "init(addresses): Chipmunk's function addresses, packed uintptr_t."},
    {"layout", layout, METH_NOARGS, "The sizes and offsets of the Chipmunk structs as this module declares them."},
    {"rollout", rollout, METH_VARARGS, "One rollout; see causalplay.envs.physics_sim._simulate_c."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "physics_rollout", "physics_sim's rollout in C.", -1, methods};

PyMODINIT_FUNC PyInit_physics_rollout(void) { return PyModule_Create(&module); }
