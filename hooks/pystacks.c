/* pystacks.c - the Python frames of each recorded allocation, for torch's
 * memory history (torch.cuda.memory._record_memory_history(stacks="python")
 * under cca, and cca.record_history(stacks="python")).
 *
 * cca_pystacks_capture is libcca's context function (cca_history_set_context):
 * while an allocator records, cca_malloc and cca_free call it on the calling
 * thread before taking any lock of cca's. It reads the thread's Python frames
 * through the interpreter's C API, found in the running process with dlsym
 * (nothing here links libpython, and nothing runs in a process without
 * Python), and returns the id of that stack, interned: the same frames give
 * the same id. cca_pystacks_json turns an id back into torch's frame list.
 *
 * Which threads: one that holds the interpreter lock (GIL) is read at once;
 * one that has a Python thread state but released the lock (eager PyTorch's
 * operators release it, ctypes calls do) takes it back for the read, as
 * torch's own allocator does for its allocations and frees - no lock of
 * cca's is held then, nor torch's (CUDAPluggableAllocator calls the free
 * hook after dropping its own); a thread that never ran Python (a CUDA
 * library's) gets no frames and never waits.
 *
 * What it costs: one walk of the thread's frames per call, hashing (code,
 * line) pairs; a code object's file and function names are read once and
 * kept (the code object with them, so its address is never reused): the
 * table keeps every code object and stack it has seen until
 * cca_pystacks_clear, which the package does not call (a live block's
 * frames must stay readable) - a program that makes code without end
 * (exec, notebook cells) grows it. Interpreter finalization can begin
 * between the check below and taking the GIL, as in torch's own
 * allocator: the package stops captures at exit first (atexit). Nothing
 * runs when not recording: libcca calls it only then. The table's lock is
 * never held across a call into Python (a collection that runs while frames
 * are read may free tensors, and so call this again). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include "cca.h"

#define PYSTACKS_API __attribute__((visibility("default")))
#define PYSTACKS_DEPTH 512                            /* frames kept per stack, innermost first */

typedef void *pyobj;
static struct {
    int (*is_initialized)(void);
    int (*is_finalizing)(void);
    void *(*this_thread_state)(void);
    int (*gil_check)(void);
    void *(*current_state)(void);                     /* PyThreadState_GetUnchecked (3.13), _PyThreadState_UncheckedGet */
    int (*gil_ensure)(void);
    void (*gil_release)(int);
    pyobj (*get_frame)(void);
    pyobj (*frame_back)(pyobj);
    pyobj (*frame_code)(pyobj);
    int (*frame_line)(pyobj);
    void (*incref)(pyobj);
    void (*decref)(pyobj);
    pyobj (*getattr)(pyobj, pyobj);
    const char *(*utf8)(pyobj, ssize_t *);
    pyobj (*intern)(const char *);
    void (*err_fetch)(pyobj *, pyobj *, pyobj *);
    void (*err_clear)(void);
    void (*err_restore)(pyobj, pyobj, pyobj);
    pyobj s_filename, s_name;
} py;
static atomic_bool py_ready;                           /* py is filled */
static atomic_int py_actions;                           /* capture for: bit 1 << action */

typedef struct { pyobj code; char *file, *name; } code_t;
typedef struct { uint32_t code; int32_t line; } frame_t;
typedef struct { size_t first; uint32_t n; uint64_t hash; char *json; } pystack_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* A forked child starts with mu free (another thread may have held it). */
static void child_after_fork(void) { pthread_mutex_init(&mu, NULL); }
static void install_atfork(void) { pthread_atfork(NULL, NULL, child_after_fork); }
static code_t *codes;
static size_t n_codes, cap_codes;
/* An open-addressing index over an array: slot holds index + 1 (0: empty),
 * placed by the entry's hash; cap a power of two. */
typedef struct { uint32_t *slot; size_t cap; } slots_t;
static slots_t code_slots;                             /* by code address */
static frame_t *frames;
static size_t n_frames, cap_frames;
static pystack_t *stacks;
static size_t n_stacks, cap_stacks;
static slots_t stack_slots;                            /* by the stack's hash */
static uint32_t generation = 1;                        /* ids: generation << 32 | index + 1 */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);                             /* the high bits too: slots are its low bits */
}

static bool grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return true;
    size_t c = *cap ? *cap * 2 : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * size);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

static uint64_t code_hash(const void *code) { return mix(0, (uintptr_t)code); }
static uint64_t code_key(size_t k) { return code_hash(codes[k].code); }
static uint64_t stack_key(size_t k) { return stacks[k].hash; }

static void slots_put(slots_t *t, uint64_t h, size_t k)
{
    size_t mask = t->cap - 1, i = (size_t)h & mask;
    while (t->slot[i]) i = (i + 1) & mask;
    t->slot[i] = (uint32_t)k + 1;
}

/* Room for entry n (entries 0..n-1 placed by key): the index doubles once
 * half full; false where host memory ran out (the index as it was). */
static bool slots_room(slots_t *t, size_t n, size_t first_cap, uint64_t (*key)(size_t))
{
    if ((n + 1) * 2 <= t->cap) return true;
    slots_t g = { calloc(t->cap ? t->cap * 2 : first_cap, sizeof *g.slot), t->cap ? t->cap * 2 : first_cap };
    if (!g.slot) return false;
    for (size_t k = 0; k < n; k++) slots_put(&g, key(k), k);
    free(t->slot);
    *t = g;
    return true;
}

/* The index of code in codes, or -1 (mu held). */
static long code_find(pyobj code)
{
    if (!code_slots.cap) return -1;
    size_t mask = code_slots.cap - 1, i = (size_t)code_hash(code) & mask;
    for (; code_slots.slot[i]; i = (i + 1) & mask)
        if (codes[code_slots.slot[i] - 1].code == code) return (long)code_slots.slot[i] - 1;
    return -1;
}

/* Adds code (a reference the table keeps) with its names (mu held); false
 * where host memory ran out. */
static bool code_add(pyobj code, char *file, char *name)
{
    if (!slots_room(&code_slots, n_codes, 256, code_key)) return false;
    if (!grow((void **)&codes, &cap_codes, n_codes + 1, sizeof *codes)) return false;
    codes[n_codes] = (code_t){ code, file, name };
    slots_put(&code_slots, code_hash(code), n_codes++);
    return true;
}

/* The id of the stack f[0..n) (mu held), interned; 0 where memory ran out. */
static uint64_t stack_intern(const frame_t *f, uint32_t n)
{
    uint64_t h = mix(n, 0);
    for (uint32_t k = 0; k < n; k++) h = mix(mix(h, f[k].code), (uint32_t)f[k].line);
    if (stack_slots.cap) {
        size_t mask = stack_slots.cap - 1;
        for (size_t i = (size_t)h & mask; stack_slots.slot[i]; i = (i + 1) & mask) {
            const pystack_t *s = &stacks[stack_slots.slot[i] - 1];
            if (s->hash == h && s->n == n && !memcmp(&frames[s->first], f, n * sizeof *f))
                return (uint64_t)generation << 32 | stack_slots.slot[i];
        }
    }
    if (!slots_room(&stack_slots, n_stacks, 1024, stack_key)) return 0;
    if (!grow((void **)&stacks, &cap_stacks, n_stacks + 1, sizeof *stacks) ||
        !grow((void **)&frames, &cap_frames, n_frames + n, sizeof *frames))
        return 0;
    memcpy(&frames[n_frames], f, n * sizeof *f);
    stacks[n_stacks] = (pystack_t){ n_frames, n, h, NULL };
    slots_put(&stack_slots, h, n_stacks++);
    n_frames += n;
    return (uint64_t)generation << 32 | n_stacks;
}

/* A copy of str attribute `attr` of code (GIL held): "??" where it cannot
 * be had as UTF-8 (a file name with lone surrogates); NULL only where host
 * memory ran out. An error it raises is cleared. */
static char *code_string(pyobj code, pyobj attr)
{
    pyobj v = py.getattr(code, attr);
    const char *s = NULL;
    ssize_t len = 0;
    if (v) s = py.utf8(v, &len);
    char *copy = s ? strndup(s, (size_t)len) : strdup("??");
    if (v) py.decref(v);
    if (!s) py.err_clear();
    return copy;
}

/* Reads the calling thread's frames (GIL held) into f, code objects as new
 * references in refs; returns how many. */
static uint32_t frames_read(pyobj *refs, int32_t *lines)
{
    uint32_t n = 0;
    pyobj fr = py.get_frame();                         /* borrowed */
    if (!fr) return 0;
    py.incref(fr);
    while (fr && n < PYSTACKS_DEPTH) {
        refs[n] = py.frame_code(fr);
        lines[n] = py.frame_line(fr);
        if (refs[n]) n++;
        pyobj back = py.frame_back(fr);
        py.decref(fr);
        fr = back;
    }
    if (fr) py.decref(fr);
    return n;
}

/* The stack of code objects refs[0..n) at lines (GIL held): their names
 * read where new (outside mu: reading attributes runs Python), then every
 * code looked up again and the stack interned under mu, so that a clear in
 * between cannot leave an index of the old table. */
static uint64_t stack_of(pyobj *refs, const int32_t *lines, uint32_t n)
{
    frame_t f[PYSTACKS_DEPTH];
    char *file[PYSTACKS_DEPTH], *name[PYSTACKS_DEPTH];
    pthread_mutex_lock(&mu);
    for (uint32_t k = 0; k < n; k++) file[k] = name[k] = code_find(refs[k]) < 0 ? (char *)1 : NULL;
    pthread_mutex_unlock(&mu);
    for (uint32_t k = 0; k < n; k++)
        if (file[k]) {
            file[k] = code_string(refs[k], py.s_filename);
            name[k] = code_string(refs[k], py.s_name);
        }
    bool lost = false;
    pthread_mutex_lock(&mu);
    for (uint32_t k = 0; k < n; k++) {
        long c = code_find(refs[k]);
        if (c < 0 && !lost && file[k] && name[k] && code_add(refs[k], file[k], name[k])) {
            py.incref(refs[k]);                        /* the table's own reference: its address stays its */
            c = (long)n_codes - 1;
            file[k] = name[k] = NULL;
        }
        free(file[k]);
        free(name[k]);
        lost |= c < 0;                                 /* host memory ran out (or a clear came): no frames */
        f[k] = (frame_t){ c < 0 ? 0 : (uint32_t)c, lines[k] };
    }
    uint64_t id = lost ? 0 : stack_intern(f, n);
    pthread_mutex_unlock(&mu);
    return id;
}

/* Whether this thread holds the interpreter lock: its own thread state is
 * the current one (PyGILState_Check answers 1 for every thread once a
 * sub-interpreter exists; it is the fallback where the getter is missing). */
static bool gil_held(void *mine)
{
    return py.current_state ? py.current_state() == mine : py.gil_check() != 0;
}

PYSTACKS_API uint64_t cca_pystacks_capture(int action)
{
    if (!atomic_load_explicit(&py_ready, memory_order_acquire) ||
        !(atomic_load_explicit(&py_actions, memory_order_relaxed) >> action & 1))
        return 0;
    if (!py.is_initialized() || (py.is_finalizing && py.is_finalizing())) return 0;
    void *mine = py.this_thread_state();
    if (!mine) return 0;                               /* a thread that never ran Python */
    bool held = gil_held(mine);
    int state = held ? 0 : py.gil_ensure();
    pyobj et, ev, etb;                                 /* the thread's own exception, if one is set, stays */
    py.err_fetch(&et, &ev, &etb);
    pyobj refs[PYSTACKS_DEPTH];
    int32_t lines[PYSTACKS_DEPTH];
    uint32_t n = frames_read(refs, lines);
    uint64_t id = n ? stack_of(refs, lines, n) : 0;
    for (uint32_t k = 0; k < n; k++) py.decref(refs[k]);
    py.err_clear();                                    /* one a frame's making raised (MemoryError) */
    py.err_restore(et, ev, etb);
    if (!held) py.gil_release(state);
    return id;
}

static void *sym(const char *name, bool *ok)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    if (!p) *ok = false;
    return p;
}

/* Finds the interpreter's C API in this process and captures for `actions`
 * (bit 1 << CCA_HISTORY_ALLOC, 1 << CCA_HISTORY_FREE_REQUESTED; 0: none).
 * Returns 0, or -1 where this process has no Python interpreter. */
PYSTACKS_API int cca_pystacks_start(int actions)
{
    pthread_once(&atfork_once, install_atfork);
    if (!atomic_load_explicit(&py_ready, memory_order_acquire)) {
        bool ok = true;
        *(void **)&py.is_initialized = sym("Py_IsInitialized", &ok);
        *(void **)&py.this_thread_state = sym("PyGILState_GetThisThreadState", &ok);
        *(void **)&py.gil_check = sym("PyGILState_Check", &ok);
        *(void **)&py.gil_ensure = sym("PyGILState_Ensure", &ok);
        *(void **)&py.gil_release = sym("PyGILState_Release", &ok);
        *(void **)&py.get_frame = sym("PyEval_GetFrame", &ok);
        *(void **)&py.frame_back = sym("PyFrame_GetBack", &ok);
        *(void **)&py.frame_code = sym("PyFrame_GetCode", &ok);
        *(void **)&py.frame_line = sym("PyFrame_GetLineNumber", &ok);
        *(void **)&py.incref = sym("Py_IncRef", &ok);
        *(void **)&py.decref = sym("Py_DecRef", &ok);
        *(void **)&py.getattr = sym("PyObject_GetAttr", &ok);
        *(void **)&py.utf8 = sym("PyUnicode_AsUTF8AndSize", &ok);
        *(void **)&py.intern = sym("PyUnicode_InternFromString", &ok);
        *(void **)&py.err_fetch = sym("PyErr_Fetch", &ok);
        *(void **)&py.err_restore = sym("PyErr_Restore", &ok);
        *(void **)&py.err_clear = sym("PyErr_Clear", &ok);
        *(void **)&py.current_state = dlsym(RTLD_DEFAULT, "PyThreadState_GetUnchecked");
        if (!py.current_state) *(void **)&py.current_state = dlsym(RTLD_DEFAULT, "_PyThreadState_UncheckedGet");
        bool fin = true;                               /* Py_IsFinalizing from 3.13, _Py_IsFinalizing before */
        *(void **)&py.is_finalizing = sym("Py_IsFinalizing", &fin);
        if (!fin) *(void **)&py.is_finalizing = dlsym(RTLD_DEFAULT, "_Py_IsFinalizing");
        if (!ok || !py.is_initialized()) return -1;
        int state = py.gil_ensure();
        py.s_filename = py.intern("co_filename");
        py.s_name = py.intern("co_name");
        py.gil_release(state);
        if (!py.s_filename || !py.s_name) return -1;
        atomic_store_explicit(&py_ready, true, memory_order_release);
    }
    atomic_store_explicit(&py_actions, actions, memory_order_relaxed);
    return 0;
}

/* Forgets every stack (ids given before mean no frames from now on); the
 * code objects the table kept are released. */
PYSTACKS_API void cca_pystacks_clear(void)
{
    pthread_mutex_lock(&mu);
    code_t *old = codes;
    size_t n_old = n_codes;
    for (size_t k = 0; k < n_stacks; k++) free(stacks[k].json);
    codes = NULL;
    n_codes = cap_codes = n_stacks = n_frames = 0;
    free(code_slots.slot);
    free(stack_slots.slot);
    code_slots = stack_slots = (slots_t){ NULL, 0 };
    generation++;
    pthread_mutex_unlock(&mu);
    if (n_old && atomic_load_explicit(&py_ready, memory_order_acquire) && py.is_initialized()) {
        int state = py.gil_ensure();
        for (size_t k = 0; k < n_old; k++) py.decref(old[k].code);
        py.gil_release(state);
    }
    for (size_t k = 0; k < n_old; k++) {
        free(old[k].file);
        free(old[k].name);
    }
    free(old);
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
        else if (*c < 0x20) fprintf(f, "\\u%04x", *c);
        else fputc(*c, f);
    }
    fputc('"', f);
}

/* The frames of stack `id` as torch writes them, innermost first:
 * [{"name": ..., "filename": ..., "line": N}, ...] ("[]" for 0, an id of
 * before the last clear, or one never given), copied into buf (cap bytes,
 * NUL-terminated where it fits); returns the text's length without the NUL
 * (cap too small: call again with that plus one). */
PYSTACKS_API size_t cca_pystacks_json(uint64_t id, char *buf, size_t cap)
{
    pthread_mutex_lock(&mu);
    uint64_t k = id & 0xffffffffu;
    pystack_t *s = id >> 32 == generation && k && k <= n_stacks ? &stacks[k - 1] : NULL;
    if (s && !s->json) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (f) {
            fputc('[', f);
            for (uint32_t j = 0; j < s->n; j++) {
                const frame_t *fr = &frames[s->first + j];
                fputs(j ? ", {\"name\": " : "{\"name\": ", f);
                json_str(f, codes[fr->code].name);
                fputs(", \"filename\": ", f);
                json_str(f, codes[fr->code].file);
                fprintf(f, ", \"line\": %d}", fr->line);
            }
            fputc(']', f);
            if (fclose(f) == 0) s->json = text;
            else free(text);
        }
    }
    const char *out = s && s->json ? s->json : "[]";
    size_t len = strlen(out);
    if (buf && cap) {
        size_t n = len < cap ? len : cap - 1;
        memcpy(buf, out, n);
        buf[n] = 0;
    }
    pthread_mutex_unlock(&mu);
    return len;
}

/* How many distinct stacks and code objects the table holds. */
PYSTACKS_API void cca_pystacks_counts(size_t *n_stacks_out, size_t *n_codes_out)
{
    pthread_mutex_lock(&mu);
    if (n_stacks_out) *n_stacks_out = n_stacks;
    if (n_codes_out) *n_codes_out = n_codes;
    pthread_mutex_unlock(&mu);
}
