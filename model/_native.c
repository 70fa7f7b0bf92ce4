/* model._native: the explorer's two hot walks over model state, in C.
 *
 * deep_copy(x, memo)               -- exactly model.statecopy.py_deep_copy(x, memo)
 * canonical(x, drop_time)          -- exactly model.fingerprint.py_canonical(x, drop_time)
 * canonical_bytes(x, drop_time)    -- exactly model.fingerprint.encode(py_canonical(x, drop_time))
 *
 * All three follow their Python reference line by line (same cases, same order, same memo
 * numbering); every decision that depends on a class (its fields, whether it is a value,
 * whether it customizes copying) is made once per class by the Python module, which passes
 * it here through configure_copy / configure_canonical. A class that customizes copying is
 * handed back to copy.deepcopy. Each walk's memo is a table keyed by object address (AddrMap).
 * tests/test_native_walk.py checks that the walks agree with the Python ones on every
 * variant's states.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* -- shared ---------------------------------------------------------------------------- */

static PyObject *s_append, *s_extend, *s_maxlen, *s_dict, *s_name, *s_qualname;
static PyObject *s_dicttag, *s_tuple, *s_frozenset, *s_list, *s_deque, *s_set, *s_ref, *s_method, *s_fn, *s_multiset;
static PyObject *empty_tuple;

static PyObject *
memo_key(PyObject *x)
{
    return PyLong_FromVoidPtr(x);
}

/* The offset of a slot whose descriptor (from the Python side: a member descriptor, or None
 * where attribute access is not plain) is an object member: read and written directly, as the
 * descriptor would; -1 where the walk must go through getattr / object.__setattr__. */
static inline Py_ssize_t
member_offset(PyObject *descr)
{
    if (descr == Py_None)
        return -1;
    PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
    if (m->type != T_OBJECT_EX || (m->flags & READONLY))
        return -1;
    return m->offset;
}

/* getattr(x, name), or NULL with no error set where the attribute is unset (AttributeError) */
static inline PyObject *
get_slot(PyObject *x, PyObject *name, PyObject *descr)
{
    Py_ssize_t off = member_offset(descr);
    if (off >= 0) {
        PyObject *v = *(PyObject **)((char *)x + off);
        Py_XINCREF(v);
        return v;
    }
    PyObject *v = PyObject_GetAttr(x, name);
    if (v == NULL && PyErr_ExceptionMatches(PyExc_AttributeError))
        PyErr_Clear();
    return v;
}

/* field i of an object whose fields are `names` (with their member descriptors `descrs`), as
 * the canonical walks read it: a new reference, None where it is unset; NULL on an error */
static inline PyObject *
field_value(PyObject *x, PyObject *names, PyObject *descrs, Py_ssize_t i)
{
    PyObject *v = get_slot(x, PyTuple_GET_ITEM(names, i), PyTuple_GET_ITEM(descrs, i));
    if (v == NULL && !PyErr_Occurred())
        v = Py_NewRef(Py_None);
    return v;
}

/* object.__setattr__(y, name, v) */
static inline int
set_slot(PyObject *y, PyObject *name, PyObject *descr, PyObject *v)
{
    Py_ssize_t off = member_offset(descr);
    if (off >= 0) {
        PyObject **p = (PyObject **)((char *)y + off);
        PyObject *old = *p;
        Py_INCREF(v);
        *p = v;
        Py_XDECREF(old);
        return 0;
    }
    return PyObject_GenericSetAttr(y, name, v);
}

/* An open-addressing table keyed by object address: the walks' memos (original -> copy,
 * object -> back-reference number). A dict keyed by id() did the same with an int allocated
 * and hashed per object. The walk keeps every key alive while it runs, so no address is
 * reused; the first ADDRMAP_INLINE slots are inline. */
#define ADDRMAP_INLINE 1024
typedef struct {
    PyObject **keys;
    void **vals;
    Py_ssize_t cap, n; /* cap: a power of two; at most half full */
    PyObject *inline_keys[ADDRMAP_INLINE];
    void *inline_vals[ADDRMAP_INLINE];
} AddrMap;

static void
addrmap_init(AddrMap *m)
{
    m->keys = m->inline_keys;
    m->vals = m->inline_vals;
    m->cap = ADDRMAP_INLINE;
    m->n = 0;
    memset(m->inline_keys, 0, sizeof m->inline_keys);
}

static void
addrmap_free(AddrMap *m)
{
    if (m->keys != m->inline_keys) {
        PyMem_Free(m->keys);
        PyMem_Free(m->vals);
    }
}

static inline size_t
addrmap_slot(const AddrMap *m, const PyObject *x)
{
    return (size_t)((((uintptr_t)x >> 4) * (uintptr_t)0x9E3779B97F4A7C15ULL) >> 17) & (size_t)(m->cap - 1);
}

/* whether x is there (its value in *v) */
static inline int
addrmap_get(const AddrMap *m, const PyObject *x, void **v)
{
    for (size_t i = addrmap_slot(m, x);; i = (i + 1) & (size_t)(m->cap - 1)) {
        if (m->keys[i] == x) {
            *v = m->vals[i];
            return 1;
        }
        if (m->keys[i] == NULL)
            return 0;
    }
}

static inline void
addrmap_place(AddrMap *m, PyObject *x, void *v)
{
    size_t i = addrmap_slot(m, x);
    while (m->keys[i] != NULL)
        i = (i + 1) & (size_t)(m->cap - 1);
    m->keys[i] = x;
    m->vals[i] = v;
}

/* add x (not there) with value v */
static int
addrmap_put(AddrMap *m, PyObject *x, void *v)
{
    if (2 * (m->n + 1) > m->cap) {
        Py_ssize_t old_cap = m->cap;
        PyObject **old_keys = m->keys;
        void **old_vals = m->vals;
        PyObject **keys = PyMem_Calloc((size_t)old_cap * 2, sizeof(PyObject *));
        void **vals = PyMem_Malloc((size_t)old_cap * 2 * sizeof(void *));
        if (keys == NULL || vals == NULL) {
            PyMem_Free(keys);
            PyMem_Free(vals);
            PyErr_NoMemory();
            return -1;
        }
        m->keys = keys;
        m->vals = vals;
        m->cap = old_cap * 2;
        for (Py_ssize_t i = 0; i < old_cap; i++)
            if (old_keys[i] != NULL)
                addrmap_place(m, old_keys[i], old_vals[i]);
        if (old_keys != m->inline_keys) {
            PyMem_Free(old_keys);
            PyMem_Free(old_vals);
        }
    }
    addrmap_place(m, x, v);
    m->n++;
    return 0;
}

/* The canonical walks' memo: object -> its back-reference number (the number of objects
 * memoized before it) */
typedef AddrMap RefMap;
#define refmap_init addrmap_init
#define refmap_free addrmap_free

/* x's number, or -1 */
static inline Py_ssize_t
refmap_get(const RefMap *m, const PyObject *x)
{
    void *v;
    return addrmap_get(m, x, &v) ? (Py_ssize_t)(intptr_t)v : -1;
}

/* memoize x (not there) with the next number */
static inline int
refmap_add(RefMap *m, PyObject *x)
{
    return addrmap_put(m, x, (void *)(intptr_t)m->n);
}

/* -- deep_copy ------------------------------------------------------------------------- */

static PyObject *c_atomic;      /* frozenset of types returned as they are */
static PyObject *c_info;        /* dict type -> info: "value" | "custom" |
                                   (slots, has_dict, member descriptors) */
static PyObject *c_info_fn;     /* callable(type) -> info */
static PyObject *c_fallback;    /* copy.deepcopy */
static PyObject *c_deque_type;
static PyObject *s_value, *s_custom;

/* The copy's memo: original -> copy (an AddrMap holding both, so no address is reused while
 * the walk runs), seeded with what the caller's memo dict pre-maps. The dict itself is written
 * only around a class that customizes copying (handed to copy.deepcopy with every mapping so
 * far, and read back after). */
typedef struct {
    AddrMap map;
    PyObject *dict;    /* the caller's memo: id(original) -> copy */
} CopyMemo;

/* x's copy (borrowed), or NULL */
static inline PyObject *
cm_get(const CopyMemo *m, const PyObject *x)
{
    void *y;
    return addrmap_get(&m->map, x, &y) ? (PyObject *)y : NULL;
}

/* map x (not there) to y, holding both */
static int
cm_put(CopyMemo *m, PyObject *x, PyObject *y)
{
    if (addrmap_put(&m->map, x, y) < 0)
        return -1;
    Py_INCREF(x);
    Py_INCREF(y);
    return 0;
}

/* x was copied as y, a new object */
static int
cm_created(CopyMemo *m, PyObject *x, PyObject *y)
{
    return cm_put(m, x, y);
}

static void
cm_free(CopyMemo *m)
{
    for (Py_ssize_t i = 0; i < m->map.cap; i++)
        if (m->map.keys[i] != NULL) {
            Py_DECREF(m->map.keys[i]);
            Py_DECREF((PyObject *)m->map.vals[i]);
        }
    addrmap_free(&m->map);
}

/* take the dict's entries that the table lacks (all of them at the start; after copy.deepcopy,
 * what it added); a key is id() of an object that the dict's owner keeps alive */
static int
cm_read_dict(CopyMemo *m)
{
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(m->dict, &pos, &k, &v)) {
        if (!PyLong_Check(k))
            continue;
        PyObject *x = PyLong_AsVoidPtr(k);
        if (x == NULL && PyErr_Occurred())
            return -1;
        if (x == m->dict || cm_get(m, x) != NULL)
            continue; /* copy.deepcopy's list of objects it keeps alive is under id(memo) */
        if (cm_put(m, x, v) < 0)
            return -1;
    }
    return 0;
}

/* put the table's entries into the dict (before it is handed to copy.deepcopy) */
static int
cm_write_dict(CopyMemo *m)
{
    for (Py_ssize_t i = 0; i < m->map.cap; i++) {
        if (m->map.keys[i] == NULL)
            continue;
        PyObject *k = PyLong_FromVoidPtr(m->map.keys[i]);
        int r = k ? PyDict_SetItem(m->dict, k, (PyObject *)m->map.vals[i]) : -1;
        Py_XDECREF(k);
        if (r < 0)
            return -1;
    }
    return 0;
}

static int
cm_init(CopyMemo *m, PyObject *dict)
{
    addrmap_init(&m->map);
    m->dict = dict;
    return cm_read_dict(m);
}

static PyObject *dc(PyObject *x, CopyMemo *memo);

/* Per class, what the copy asks of it on every object: whether it is atomic (c_atomic) and its
 * info (c_info, once copy_info has asked for it), in a direct-mapped cache instead of a set and
 * a dict looked up each time. An entry holds its class (no address is reused while it is
 * there); configure_copy empties the cache. */
#define COPY_TYPES 256
typedef struct {
    PyTypeObject *t;
    int atomic;
    PyObject *info; /* NULL: not known yet */
} CopyType;
static CopyType c_types[COPY_TYPES];

static void
copy_types_clear(void)
{
    for (int i = 0; i < COPY_TYPES; i++) {
        Py_CLEAR(c_types[i].info);
        PyTypeObject *t = c_types[i].t;
        c_types[i].t = NULL;
        Py_XDECREF(t);
    }
}

/* t's entry, filled on a miss */
static CopyType *
copy_type(PyTypeObject *t)
{
    CopyType *e = &c_types[((((uintptr_t)t >> 4) * (uintptr_t)0x9E3779B97F4A7C15ULL) >> 20) % COPY_TYPES];
    if (e->t == t)
        return e;
    int atomic = PySet_Contains(c_atomic, (PyObject *)t);
    if (atomic < 0)
        return NULL;
    PyObject *info = PyDict_GetItemWithError(c_info, (PyObject *)t);
    if (info == NULL && PyErr_Occurred())
        return NULL;
    Py_CLEAR(e->info);
    Py_XDECREF(e->t);
    Py_INCREF(t);
    e->t = t;
    e->atomic = atomic;
    e->info = Py_XNewRef(info);
    return e;
}

static inline int
is_atomic(PyTypeObject *t)
{
    if (t == &PyLong_Type || t == &PyUnicode_Type || t == &PyFloat_Type || t == &PyBool_Type ||
        t == Py_TYPE(Py_None) || t == &PyBytes_Type)
        return 1;
    CopyType *e = copy_type(t);
    return e == NULL ? -1 : e->atomic;
}

/* the element of a container: atomic ones are kept as they are */
static inline PyObject *
dc_elem(PyObject *e, CopyMemo *memo)
{
    int a = is_atomic(Py_TYPE(e));
    if (a < 0)
        return NULL;
    if (a) {
        Py_INCREF(e);
        return e;
    }
    return dc(e, memo);
}

/* [copy of e for e in x], as a new list (atomic elements kept) */
static PyObject *
dc_items(PyObject *x, CopyMemo *memo)
{
    PyObject *items = PySequence_List(x);
    if (items == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *c = dc_elem(PyList_GET_ITEM(items, i), memo);
        if (c == NULL) {
            Py_DECREF(items);
            return NULL;
        }
        PyList_SetItem(items, i, c); /* steals c, drops the element */
    }
    return items;
}

/* t's info, asked of model.statecopy._copy_info once per class (kept in c_info and the cache) */
static PyObject *
copy_info(PyTypeObject *t)
{
    CopyType *e = copy_type(t);
    if (e == NULL)
        return NULL;
    if (e->info != NULL)
        return Py_NewRef(e->info);
    PyObject *info = PyObject_CallOneArg(c_info_fn, (PyObject *)t);
    if (info == NULL)
        return NULL;
    if (PyDict_SetItem(c_info, (PyObject *)t, info) < 0) {
        Py_DECREF(info);
        return NULL;
    }
    e = copy_type(t); /* the call ran Python code */
    if (e == NULL) {
        Py_DECREF(info);
        return NULL;
    }
    Py_XSETREF(e->info, Py_NewRef(info));
    return info;
}

static PyObject *
dc_object(PyObject *x, CopyMemo *memo, PyObject *info)
{
    PyTypeObject *t = Py_TYPE(x);
    PyObject *slots = PyTuple_GET_ITEM(info, 0);
    int has_dict = PyTuple_GET_ITEM(info, 1) == Py_True;
    PyObject *descrs = PyTuple_GET_ITEM(info, 2);
    PyObject *y = PyBaseObject_Type.tp_new(t, empty_tuple, NULL);
    if (y == NULL)
        return NULL;
    if (cm_created(memo, x, y) < 0)
        goto fail;
    Py_ssize_t n = PyTuple_GET_SIZE(slots);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(slots, i);
        PyObject *descr = PyTuple_GET_ITEM(descrs, i);
        PyObject *v = get_slot(x, name, descr);
        if (v == NULL) {
            if (PyErr_Occurred())
                goto fail;
            continue;
        }
        PyObject *c;
        int a = is_atomic(Py_TYPE(v));
        if (a < 0) {
            Py_DECREF(v);
            goto fail;
        }
        if (a) {
            c = v;
        } else {
            c = dc(v, memo);
            Py_DECREF(v);
            if (c == NULL)
                goto fail;
        }
        int r = set_slot(y, name, descr, c);
        Py_DECREF(c);
        if (r < 0)
            goto fail;
    }
    if (has_dict) {
        PyObject *d = PyObject_GetAttr(x, s_dict);
        if (d == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                goto fail;
            PyErr_Clear();
        } else if (d != Py_None) {
            PyObject *yd = PyObject_GetAttr(y, s_dict);
            if (yd == NULL) {
                Py_DECREF(d);
                goto fail;
            }
            PyObject *k, *v;
            Py_ssize_t pos = 0;
            while (PyDict_Next(d, &pos, &k, &v)) {
                PyObject *c = dc_elem(v, memo);
                if (c == NULL || PyObject_SetItem(yd, k, c) < 0) {
                    Py_XDECREF(c);
                    Py_DECREF(yd);
                    Py_DECREF(d);
                    goto fail;
                }
                Py_DECREF(c);
            }
            Py_DECREF(yd);
            Py_DECREF(d);
        } else {
            Py_DECREF(d);
        }
    }
    return y;
fail:
    Py_DECREF(y);
    return NULL;
}

static PyObject *
dc(PyObject *x, CopyMemo *memo)
{
    PyTypeObject *t = Py_TYPE(x);
    PyObject *info = NULL;
    if (t == &PyLong_Type || t == &PyUnicode_Type || t == &PyFloat_Type || t == &PyBool_Type ||
        t == Py_TYPE(Py_None) || t == &PyBytes_Type)
        return Py_NewRef(x);
    CopyType *te = copy_type(t);
    if (te == NULL)
        return NULL;
    if (te->atomic)
        return Py_NewRef(x);
    info = te->info;
    if (info == s_value)
        return Py_NewRef(x);
    PyObject *y = cm_get(memo, x);
    if (y != NULL) {
        Py_INCREF(y);
        return y;
    }
    if (t == &PyTuple_Type) {
        Py_ssize_t n = PyTuple_GET_SIZE(x);
        PyObject *out = PyTuple_New(n);
        if (out == NULL)
            return NULL;
        int changed = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *c = dc(PyTuple_GET_ITEM(x, i), memo);
            if (c == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            if (c != PyTuple_GET_ITEM(x, i))
                changed = 1;
            PyTuple_SET_ITEM(out, i, c);
        }
        if (changed)
            return out;
        Py_DECREF(out);
        Py_INCREF(x);
        return x;
    }
    if (t == &PyList_Type) {
        Py_ssize_t n = PyList_GET_SIZE(x);
        y = PyList_New(0);
        if (y == NULL || cm_created(memo, x, y) < 0)
            goto fail;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(x) && i < n; i++) {
            PyObject *e = PyList_GET_ITEM(x, i);
            PyObject *c;
            if (Py_TYPE(e) == &PyTuple_Type && PyTuple_GET_SIZE(e) == 0) {
                Py_INCREF(e);
                c = e;
            } else {
                c = dc_elem(e, memo);
            }
            if (c == NULL || PyList_Append(y, c) < 0) {
                Py_XDECREF(c);
                goto fail;
            }
            Py_DECREF(c);
        }
        return y;
    }
    if ((PyObject *)t == c_deque_type) {
        PyObject *maxlen = PyObject_GetAttr(x, s_maxlen);
        if (maxlen == NULL)
            return NULL;
        y = PyObject_CallFunctionObjArgs(c_deque_type, empty_tuple, maxlen, NULL); /* deque((), maxlen) */
        Py_DECREF(maxlen);
        if (y == NULL || cm_created(memo, x, y) < 0)
            goto fail;
        PyObject *items = dc_items(x, memo);
        if (items == NULL)
            goto fail;
        PyObject *r = PyObject_CallMethodOneArg(y, s_extend, items);
        Py_DECREF(items);
        if (r == NULL)
            goto fail;
        Py_DECREF(r);
        return y;
    }
    if (t == &PyDict_Type) {
        y = PyDict_New();
        if (y == NULL || cm_created(memo, x, y) < 0)
            goto fail;
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(x, &pos, &k, &v)) {
            Py_INCREF(k);
            Py_INCREF(v);
            PyObject *cv = dc_elem(v, memo);
            PyObject *ck = cv ? dc_elem(k, memo) : NULL;
            Py_DECREF(k);
            Py_DECREF(v);
            if (ck == NULL || PyDict_SetItem(y, ck, cv) < 0) {
                Py_XDECREF(ck);
                Py_XDECREF(cv);
                goto fail;
            }
            Py_DECREF(ck);
            Py_DECREF(cv);
        }
        return y;
    }
    if (t == &PySet_Type) {
        y = PySet_New(NULL);
        if (y == NULL || cm_created(memo, x, y) < 0)
            goto fail;
        PyObject *items = dc_items(x, memo);
        if (items == NULL)
            goto fail;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
            if (PySet_Add(y, PyList_GET_ITEM(items, i)) < 0) {
                Py_DECREF(items);
                goto fail;
            }
        }
        Py_DECREF(items);
        return y;
    }
    if (t == &PyFrozenSet_Type) {
        PyObject *items = PySequence_List(x);
        if (items == NULL)
            return NULL;
        int all_atomic = 1;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
            PyObject *e = PyList_GET_ITEM(items, i);
            int ea = is_atomic(Py_TYPE(e));
            if (ea < 0) {
                Py_DECREF(items);
                return NULL;
            }
            if (!ea)
                all_atomic = 0;
            PyObject *c = dc(e, memo);
            if (c == NULL) {
                Py_DECREF(items);
                return NULL;
            }
            PyList_SetItem(items, i, c);
        }
        if (all_atomic) {
            Py_DECREF(items);
            Py_INCREF(x);
            return x;
        }
        y = PyFrozenSet_New(items);
        Py_DECREF(items);
        return y;
    }
    if (t == &PyMethod_Type) {
        PyObject *owner = dc(PyMethod_GET_SELF(x), memo);
        if (owner == NULL)
            return NULL;
        y = PyMethod_New(PyMethod_GET_FUNCTION(x), owner);
        Py_DECREF(owner);
        return y;
    }
    if (info == NULL) {
        info = copy_info(t);
        if (info == NULL)
            return NULL;
        Py_DECREF(info); /* the dict holds it */
        if (info == s_value) {
            Py_INCREF(x);
            return x;
        }
    }
    if (info == s_custom || !PyTuple_Check(info)) {
        /* copy.deepcopy, with every mapping so far in the dict; what it maps is read back */
        if (cm_write_dict(memo) < 0)
            return NULL;
        y = PyObject_CallFunctionObjArgs(c_fallback, x, memo->dict, NULL);
        if (y == NULL || cm_read_dict(memo) < 0)
            goto fail;
        if (cm_get(memo, x) == NULL && cm_created(memo, x, y) < 0) /* (copy.deepcopy maps it itself) */
            goto fail;
        return y;
    }
    return dc_object(x, memo, info);
fail:
    Py_XDECREF(y);
    return NULL;
}

/* deep_copy(x, memo): memo pre-maps id(original) -> copy */
static PyObject *
native_deep_copy(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "deep_copy(x, memo: dict)");
        return NULL;
    }
    if (c_info == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "model._native: configure_copy was not called");
        return NULL;
    }
    CopyMemo memo;
    PyObject *out = NULL;
    if (cm_init(&memo, args[1]) == 0)
        out = dc(args[0], &memo);
    cm_free(&memo);
    return out;
}

static PyObject *
native_configure_copy(PyObject *self, PyObject *args)
{
    PyObject *atomic, *info, *info_fn, *fallback, *deque_type, *value, *custom;
    if (!PyArg_ParseTuple(args, "O!O!OOOUU", &PyFrozenSet_Type, &atomic, &PyDict_Type, &info, &info_fn, &fallback,
                          &deque_type, &value, &custom))
        return NULL;
    copy_types_clear();
    Py_XSETREF(c_atomic, Py_NewRef(atomic));
    Py_XSETREF(c_info, Py_NewRef(info));
    Py_XSETREF(c_info_fn, Py_NewRef(info_fn));
    Py_XSETREF(c_fallback, Py_NewRef(fallback));
    Py_XSETREF(c_deque_type, Py_NewRef(deque_type));
    Py_XSETREF(s_value, Py_NewRef(value));
    Py_XSETREF(s_custom, Py_NewRef(custom));
    Py_RETURN_NONE;
}

/* -- canonical ------------------------------------------------------------------------- */

static PyObject *k_fresh;        /* dict type -> one-letter tag */
static PyObject *k_info[2];      /* per drop_time: dict type -> info */
static PyObject *k_info_fn;      /* callable(type, drop_time) -> info */
static PyObject *k_forms[2];     /* per drop_time: dict id -> (object, form) */
static Py_ssize_t k_forms_max;
static PyObject *k_sort_by_repr; /* callable(list) -> new list sorted by repr */
static PyObject *k_deque_type;
static PyObject *k_bytes[2];     /* per drop_time: dict id -> (object, bytes, id slots as bytes) */

/* info tuples: (kind, qualname, names, skip, bags, has_dict, member descriptors, bag flags);
 * kind is one of these */
enum { K_PYTHON = 0, K_VALUE = 1, K_OBJECT = 2 };

static PyObject *canon(PyObject *x, int dt, RefMap *memo);

static inline int
is_primitive(PyTypeObject *t)
{
    return t == &PyLong_Type || t == &PyFloat_Type || t == &PyUnicode_Type || t == &PyBool_Type ||
           t == Py_TYPE(Py_None) || t == &PyBytes_Type;
}

static inline PyObject *
canon_elem(PyObject *e, int dt, RefMap *memo)
{
    if (is_primitive(Py_TYPE(e))) {
        Py_INCREF(e);
        return e;
    }
    return canon(e, dt, memo);
}

/* a new tuple (tag, *items) from a list */
static PyObject *
tagged(PyObject *tag, PyObject *items)
{
    Py_ssize_t n = PyList_GET_SIZE(items);
    PyObject *out = PyTuple_New(n + 1);
    if (out == NULL)
        return NULL;
    Py_INCREF(tag);
    PyTuple_SET_ITEM(out, 0, tag);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *e = PyList_GET_ITEM(items, i);
        Py_INCREF(e);
        PyTuple_SET_ITEM(out, i + 1, e);
    }
    return out;
}

/* model.fingerprint._sorted_keys, in place on a list (returns a new reference to the sorted list) */
static PyObject *
sorted_keys(PyObject *keys)
{
    Py_ssize_t n = PyList_GET_SIZE(keys);
    if (n <= 1)
        return Py_NewRef(keys); /* nothing to order */
    if (n > 0) {
        PyTypeObject *t = Py_TYPE(PyList_GET_ITEM(keys, 0));
        if (t == &PyLong_Type || t == &PyUnicode_Type) {
            int same = 1;
            for (Py_ssize_t i = 1; i < n; i++)
                if (Py_TYPE(PyList_GET_ITEM(keys, i)) != t) {
                    same = 0;
                    break;
                }
            if (same) {
                if (PyList_Sort(keys) < 0)
                    return NULL;
                Py_INCREF(keys);
                return keys;
            }
        }
    }
    return PyObject_CallOneArg(k_sort_by_repr, keys);
}

/* [canonical form of e for e in x], as a new list */
static PyObject *
canon_list(PyObject *x, int dt, RefMap *memo)
{
    PyObject *items = PySequence_List(x);
    if (items == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *c = canon_elem(PyList_GET_ITEM(items, i), dt, memo);
        if (c == NULL) {
            Py_DECREF(items);
            return NULL;
        }
        PyList_SetItem(items, i, c); /* steals c, drops the element */
    }
    return items;
}

/* (tag, *the canonical forms of x's elements, sorted by sort(list) -> list) */
static PyObject *
canon_sorted(PyObject *tag, PyObject *x, int dt, RefMap *memo, PyObject *(*sort)(PyObject *))
{
    PyObject *items = canon_list(x, dt, memo);
    if (items == NULL)
        return NULL;
    PyObject *sorted = sort(items);
    Py_DECREF(items);
    if (sorted == NULL)
        return NULL;
    PyObject *out = tagged(tag, sorted);
    Py_DECREF(sorted);
    return out;
}

static PyObject *
sort_by_repr(PyObject *items)
{
    if (PyList_GET_SIZE(items) <= 1)
        return Py_NewRef(items); /* nothing to order */
    return PyObject_CallOneArg(k_sort_by_repr, items);
}

/* Per class, what the walks ask of it on every object: its fresh-identifier tag (k_fresh) and
 * its info per drop_time (canon_info), kept in a direct-mapped cache instead of being looked
 * up in the dicts each time. An entry holds its class, so no class it names is freed and no
 * address is reused while it is there; the cache is emptied when configure_canonical runs
 * and when k_fresh changes size (a class marked fresh after the walks met it). */
#define TYPE_CACHE 256
typedef struct {
    PyTypeObject *t;
    PyObject *tag;     /* NULL: not a fresh identifier */
    PyObject *info[2]; /* NULL: not asked yet */
} TypeEntry;
static TypeEntry k_types[TYPE_CACHE];
static Py_ssize_t k_types_fresh_size = -1;

static void
types_clear(TypeEntry *e)
{
    Py_CLEAR(e->tag);
    Py_CLEAR(e->info[0]);
    Py_CLEAR(e->info[1]);
    PyTypeObject *t = e->t;
    e->t = NULL;
    Py_XDECREF(t);
}

/* empty the cache if it may be stale (see above) */
static void
types_check(void)
{
    Py_ssize_t n = PyDict_GET_SIZE(k_fresh);
    if (n == k_types_fresh_size)
        return;
    for (int i = 0; i < TYPE_CACHE; i++)
        types_clear(&k_types[i]);
    k_types_fresh_size = n;
}

/* t's entry, filled on a miss (its tag; its infos when canon_info asks them) */
static TypeEntry *
type_entry(PyTypeObject *t)
{
    TypeEntry *e = &k_types[((((uintptr_t)t >> 4) * (uintptr_t)0x9E3779B97F4A7C15ULL) >> 20) % TYPE_CACHE];
    if (e->t == t)
        return e;
    PyObject *tag = PyDict_GetItemWithError(k_fresh, (PyObject *)t);
    if (tag == NULL && PyErr_Occurred())
        return NULL;
    types_clear(e);
    Py_INCREF(t);
    e->t = t;
    e->tag = Py_XNewRef(tag);
    return e;
}

/* t's info for drop_time dt: asked of model.fingerprint._canon_info once per class (kept in
 * k_info[dt]), then from the cache; a borrowed reference */
static PyObject *
canon_info(PyTypeObject *t, int dt)
{
    TypeEntry *e = type_entry(t);
    if (e == NULL)
        return NULL;
    if (e->info[dt] != NULL)
        return e->info[dt];
    PyObject *info = PyDict_GetItemWithError(k_info[dt], (PyObject *)t);
    if (info == NULL) {
        if (PyErr_Occurred())
            return NULL;
        info = PyObject_CallFunction(k_info_fn, "OO", (PyObject *)t, dt ? Py_True : Py_False);
        if (info == NULL)
            return NULL;
        if (!PyTuple_Check(info) || PyTuple_GET_SIZE(info) != 8) {
            Py_DECREF(info);
            PyErr_SetString(PyExc_TypeError, "model._native: a canonical info must be an 8-tuple");
            return NULL;
        }
        int r = PyDict_SetItem(k_info[dt], (PyObject *)t, info);
        Py_DECREF(info);
        if (r < 0)
            return NULL;
    }
    e = type_entry(t); /* the call may have run Python code that evicted it */
    if (e == NULL)
        return NULL;
    Py_INCREF(info);
    Py_XSETREF(e->info[dt], info);
    return info;
}

/* the __dict__ entries of x that the walks keep: a new list of (name, value), sorted by name,
 * the names in `skip` left out (empty where x has no __dict__); NULL on an error */
static PyObject *
dict_entries(PyObject *x, PyObject *skip)
{
    PyObject *entries = PyList_New(0);
    if (entries == NULL)
        return NULL;
    PyObject *d = PyObject_GetAttr(x, s_dict);
    if (d == NULL) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            return entries;
        }
        Py_DECREF(entries);
        return NULL;
    }
    int ok = PyObject_IsTrue(d);
    PyObject *keys = ok > 0 ? PySequence_List(d) : NULL;
    if (ok > 0 && (keys == NULL || PyList_Sort(keys) < 0))
        ok = -1;
    for (Py_ssize_t j = 0; ok > 0 && j < PyList_GET_SIZE(keys); j++) {
        PyObject *k = PyList_GET_ITEM(keys, j);
        int skipped = PySet_Contains(skip, k);
        if (skipped != 0) {
            ok = skipped < 0 ? -1 : ok;
            continue;
        }
        PyObject *v = PyObject_GetItem(d, k);
        PyObject *pair = v ? PyTuple_Pack(2, k, v) : NULL;
        Py_XDECREF(v);
        if (pair == NULL || PyList_Append(entries, pair) < 0)
            ok = -1;
        Py_XDECREF(pair);
    }
    Py_XDECREF(keys);
    Py_DECREF(d);
    if (ok < 0) {
        Py_DECREF(entries);
        return NULL;
    }
    return entries;
}

static PyObject *
canon_object(PyObject *x, int dt, RefMap *memo, PyObject *info)
{
    PyObject *qualname = PyTuple_GET_ITEM(info, 1);
    PyObject *names = PyTuple_GET_ITEM(info, 2);
    PyObject *skip = PyTuple_GET_ITEM(info, 3);
    PyObject *bags = PyTuple_GET_ITEM(info, 4);
    int has_dict = PyTuple_GET_ITEM(info, 5) == Py_True;
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    int any_bags = PySet_GET_SIZE(bags) > 0;
    PyObject *values = PyList_New(n);
    PyObject *out = PyList_New(1);
    if (values == NULL || out == NULL)
        goto fail;
    PyObject *descrs = PyTuple_GET_ITEM(info, 6);
    PyObject *bag_flags = PyTuple_GET_ITEM(info, 7);
    Py_INCREF(qualname);
    PyList_SET_ITEM(out, 0, qualname);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = field_value(x, names, descrs, i);
        if (v == NULL)
            goto fail;
        PyList_SET_ITEM(values, i, v);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(values, i);
        PyObject *c;
        if (any_bags && PyTuple_GET_ITEM(bag_flags, i) == Py_True) {
            c = canon_sorted(s_multiset, v, dt, memo, sort_by_repr);
        } else {
            c = canon_elem(v, dt, memo);
        }
        if (c == NULL || PyList_Append(out, c) < 0) {
            Py_XDECREF(c);
            goto fail;
        }
        Py_DECREF(c);
    }
    if (has_dict) {
        PyObject *entries = dict_entries(x, skip);
        if (entries == NULL)
            goto fail;
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(entries); j++) {
            PyObject *pair = PyList_GET_ITEM(entries, j);
            PyObject *cv = canon_elem(PyTuple_GET_ITEM(pair, 1), dt, memo);
            PyObject *out_pair = cv ? PyTuple_Pack(2, PyTuple_GET_ITEM(pair, 0), cv) : NULL;
            Py_XDECREF(cv);
            if (out_pair == NULL || PyList_Append(out, out_pair) < 0) {
                Py_XDECREF(out_pair);
                Py_DECREF(entries);
                goto fail;
            }
            Py_DECREF(out_pair);
        }
        Py_DECREF(entries);
    }
    Py_DECREF(values);
    PyObject *res = PyList_AsTuple(out);
    Py_DECREF(out);
    return res;
fail:
    Py_XDECREF(values);
    Py_XDECREF(out);
    return NULL;
}

static PyObject *
fresh_form(PyObject *x, PyObject *tag)
{
    long long v = PyLong_AsLongLong(x);
    if (v == -1 && PyErr_Occurred())
        return NULL;
    const char *tg = PyUnicode_AsUTF8(tag);
    if (tg == NULL)
        return NULL;
    char buf[96];
    snprintf(buf, sizeof buf, "\xe2\x9f\xa8%s%012lld\xe2\x9f\xa9", tg, v);
    return PyUnicode_DecodeUTF8(buf, (Py_ssize_t)strlen(buf), NULL);
}

/* a function, or a builtin function or method (kind K_PYTHON), as model.fingerprint._canon
 * names it: ("fn", its qualified name) -- a function, or a builtin bound to no object or to a
 * module; a builtin method bound to an object is a mutable object: ("method", name, owner) */
static PyObject *
canon_fn(PyObject *x, int dt, RefMap *memo)
{
    if (Py_TYPE(x) == &PyCFunction_Type) {
        PyObject *self = ((PyCFunctionObject *)x)->m_self; /* what __self__ reads (NULL: None) */
        if (self != NULL && self != Py_None && !PyModule_CheckExact(self)) {
            Py_ssize_t ref = refmap_get(memo, x);
            if (ref >= 0)
                return Py_BuildValue("(On)", s_ref, ref);
            if (refmap_add(memo, x) < 0)
                return NULL;
            PyObject *name = PyObject_GetAttr(x, s_name);
            if (name == NULL)
                return NULL;
            PyObject *owner = canon(self, dt, memo);
            PyObject *out = owner ? PyTuple_Pack(3, s_method, name, owner) : NULL;
            Py_DECREF(name);
            Py_XDECREF(owner);
            return out;
        }
    }
    PyObject *name = PyObject_GetAttr(x, s_qualname);
    if (name == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return NULL;
        PyErr_Clear();
        name = PyObject_Repr(x);
        if (name == NULL)
            return NULL;
    }
    PyObject *out = PyTuple_Pack(2, s_fn, name);
    Py_DECREF(name);
    return out;
}

static PyObject *
canon(PyObject *x, int dt, RefMap *memo)
{
    PyTypeObject *t = Py_TYPE(x);
    if (is_primitive(t)) {
        Py_INCREF(x);
        return x;
    }
    TypeEntry *te = type_entry(t);
    if (te == NULL)
        return NULL;
    if (te->tag != NULL)
        return fresh_form(x, te->tag);
    if (t == &PyTuple_Type) {
        Py_ssize_t n = PyTuple_GET_SIZE(x);
        Py_ssize_t i;
        for (i = 0; i < n; i++)
            if (!is_primitive(Py_TYPE(PyTuple_GET_ITEM(x, i))))
                break;
        if (i == n) {
            Py_INCREF(x);
            return x;
        }
        PyObject *out = PyTuple_New(n + 1);
        if (out == NULL)
            return NULL;
        Py_INCREF(s_tuple);
        PyTuple_SET_ITEM(out, 0, s_tuple);
        for (i = 0; i < n; i++) {
            PyObject *c = canon_elem(PyTuple_GET_ITEM(x, i), dt, memo);
            if (c == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            PyTuple_SET_ITEM(out, i + 1, c);
        }
        return out;
    }
    if (t == &PyFrozenSet_Type)
        return canon_sorted(s_frozenset, x, dt, memo, sorted_keys);
    PyObject *info = NULL;
    int kind = K_PYTHON;
    if (t != &PyList_Type && t != &PyDict_Type && t != &PySet_Type && t != &PyMethod_Type &&
        (PyObject *)t != k_deque_type) {
        info = canon_info(t, dt);
        if (info == NULL)
            return NULL;
        kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(info, 0));
        if (kind == K_PYTHON) /* functions and builtins */
            return canon_fn(x, dt, memo);
        if (kind == K_VALUE) {
            PyObject *forms = k_forms[dt];
            PyObject *key = memo_key(x);
            if (key == NULL)
                return NULL;
            PyObject *e = PyDict_GetItemWithError(forms, key);
            if (e != NULL && PyTuple_GET_ITEM(e, 0) == x) {
                Py_DECREF(key);
                PyObject *f = PyTuple_GET_ITEM(e, 1);
                Py_INCREF(f);
                return f;
            }
            if (PyErr_Occurred()) {
                Py_DECREF(key);
                return NULL;
            }
            RefMap own; /* its own back-references: context-free */
            refmap_init(&own);
            PyObject *form = canon_object(x, dt, &own, info);
            refmap_free(&own);
            if (form == NULL) {
                Py_DECREF(key);
                return NULL;
            }
            if (PyDict_GET_SIZE(forms) >= k_forms_max)
                PyDict_Clear(forms);
            PyObject *entry = PyTuple_Pack(2, x, form);
            if (entry == NULL || PyDict_SetItem(forms, key, entry) < 0) {
                Py_XDECREF(entry);
                Py_DECREF(key);
                Py_DECREF(form);
                return NULL;
            }
            Py_DECREF(entry);
            Py_DECREF(key);
            return form;
        }
    }
    /* a mutable object: a back-reference when met again */
    Py_ssize_t ref = refmap_get(memo, x);
    if (ref >= 0)
        return Py_BuildValue("(On)", s_ref, ref);
    if (refmap_add(memo, x) < 0)
        return NULL;
    if (t == &PyList_Type || (PyObject *)t == k_deque_type) {
        PyObject *items = canon_list(x, dt, memo);
        if (items == NULL)
            return NULL;
        PyObject *out = tagged(t == &PyList_Type ? s_list : s_deque, items);
        Py_DECREF(items);
        return out;
    }
    if (t == &PyDict_Type) {
        if (PyDict_GET_SIZE(x) == 0)
            return PyTuple_Pack(1, s_dicttag);
        PyObject *canon_key = PyDict_New();
        if (canon_key == NULL)
            return NULL;
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        PyObject *snapshot = PyDict_Copy(x);
        if (snapshot == NULL) {
            Py_DECREF(canon_key);
            return NULL;
        }
        while (PyDict_Next(snapshot, &pos, &k, &v)) {
            PyObject *ck = canon_elem(k, dt, memo);
            if (ck == NULL || PyDict_SetItem(canon_key, ck, v) < 0) {
                Py_XDECREF(ck);
                Py_DECREF(snapshot);
                Py_DECREF(canon_key);
                return NULL;
            }
            Py_DECREF(ck);
        }
        Py_DECREF(snapshot);
        PyObject *keys = PyDict_Keys(canon_key);
        PyObject *sorted = keys ? sorted_keys(keys) : NULL;
        Py_XDECREF(keys);
        if (sorted == NULL) {
            Py_DECREF(canon_key);
            return NULL;
        }
        Py_ssize_t n = PyList_GET_SIZE(sorted);
        PyObject *out = PyTuple_New(n + 1);
        if (out == NULL)
            goto dict_fail;
        Py_INCREF(s_dicttag);
        PyTuple_SET_ITEM(out, 0, s_dicttag);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *ck = PyList_GET_ITEM(sorted, i);
            PyObject *cv = canon_elem(PyDict_GetItem(canon_key, ck), dt, memo);
            PyObject *pair = cv ? PyTuple_Pack(2, ck, cv) : NULL;
            Py_XDECREF(cv);
            if (pair == NULL) {
                Py_DECREF(out);
                goto dict_fail;
            }
            PyTuple_SET_ITEM(out, i + 1, pair);
        }
        Py_DECREF(sorted);
        Py_DECREF(canon_key);
        return out;
    dict_fail:
        Py_DECREF(sorted);
        Py_DECREF(canon_key);
        return NULL;
    }
    if (t == &PySet_Type)
        return canon_sorted(s_set, x, dt, memo, sorted_keys);
    if (t == &PyMethod_Type) {
        PyObject *name = PyObject_GetAttr(x, s_name);
        if (name == NULL)
            return NULL;
        PyObject *owner = canon(PyMethod_GET_SELF(x), dt, memo);
        PyObject *out = owner ? PyTuple_Pack(3, s_method, name, owner) : NULL;
        Py_DECREF(name);
        Py_XDECREF(owner);
        return out;
    }
    return canon_object(x, dt, memo, info);
}

/* the arguments of canonical and canonical_bytes: (x, drop_time); drop_time as 0/1, or -1 */
static int
canonical_args(PyObject *const *args, Py_ssize_t nargs, const char *usage)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    if (k_fresh == NULL || k_bytes[0] == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "model._native: configure_canonical was not called");
        return -1;
    }
    types_check();
    return PyObject_IsTrue(args[1]);
}

static PyObject *
native_canonical(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int dt = canonical_args(args, nargs, "canonical(x, drop_time)");
    if (dt < 0)
        return NULL;
    RefMap memo;
    refmap_init(&memo);
    PyObject *out = canon(args[0], dt, &memo);
    refmap_free(&memo);
    return out;
}

static PyObject *
native_configure_canonical(PyObject *self, PyObject *args)
{
    PyObject *fresh, *info0, *info1, *info_fn, *forms0, *forms1, *sort_by_repr, *deque_type;
    PyObject *bytes0, *bytes1;
    Py_ssize_t forms_max;
    if (!PyArg_ParseTuple(args, "O!O!O!OO!O!nOOO!O!", &PyDict_Type, &fresh, &PyDict_Type, &info0, &PyDict_Type,
                          &info1, &info_fn, &PyDict_Type, &forms0, &PyDict_Type, &forms1, &forms_max,
                          &sort_by_repr, &deque_type, &PyDict_Type, &bytes0, &PyDict_Type, &bytes1))
        return NULL;
    Py_XSETREF(k_bytes[0], Py_NewRef(bytes0));
    Py_XSETREF(k_bytes[1], Py_NewRef(bytes1));
    Py_XSETREF(k_fresh, Py_NewRef(fresh));
    k_types_fresh_size = -1;
    Py_XSETREF(k_info[0], Py_NewRef(info0));
    Py_XSETREF(k_info[1], Py_NewRef(info1));
    Py_XSETREF(k_info_fn, Py_NewRef(info_fn));
    Py_XSETREF(k_forms[0], Py_NewRef(forms0));
    Py_XSETREF(k_forms[1], Py_NewRef(forms1));
    k_forms_max = forms_max;
    Py_XSETREF(k_sort_by_repr, Py_NewRef(sort_by_repr));
    Py_XSETREF(k_deque_type, Py_NewRef(deque_type));
    Py_RETURN_NONE;
}

/* -- canonical bytes ------------------------------------------------------------------- */

/* canonical_bytes(x, drop_time) -- exactly model.fingerprint.encode(py_canonical(x, drop_time)):
 * the canonical form written as bytes while it is walked, never built as tuples. The walk is
 * canon's (same cases, same order, same memo numbering); where canon sorts (dict keys, set and
 * frozenset elements, multisets) or hands an object to Python, the form of that part is built
 * by canon and written by w_form. A fresh identifier is written as '@', its tag and an 8-byte
 * slot; the slots are filled with ranks at the end (no search of the bytes). */

typedef struct {
    Py_ssize_t off; /* where the 8-byte slot is */
    long long val;
    char tag;
} IdSlot;

typedef struct {
    char *buf;
    Py_ssize_t len, cap;
    IdSlot *ids;
    Py_ssize_t nids, capids;
} Writer;


static void
w_free(Writer *w)
{
    PyMem_Free(w->buf);
    PyMem_Free(w->ids);
    w->buf = NULL;
    w->ids = NULL;
}

static int
w_reserve(Writer *w, Py_ssize_t n)
{
    if (w->len + n <= w->cap)
        return 0;
    Py_ssize_t cap = w->cap ? w->cap * 2 : 1024;
    while (cap < w->len + n)
        cap *= 2;
    char *b = PyMem_Realloc(w->buf, (size_t)cap);
    if (b == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    w->buf = b;
    w->cap = cap;
    return 0;
}

static inline int
w_put(Writer *w, const void *p, Py_ssize_t n)
{
    if (w_reserve(w, n) < 0)
        return -1;
    memcpy(w->buf + w->len, p, (size_t)n);
    w->len += n;
    return 0;
}

static inline int
w_byte(Writer *w, char c)
{
    return w_put(w, &c, 1);
}

static inline void
put_le(char *p, unsigned long long v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (char)((v >> (8 * i)) & 0xff);
}

/* an unsigned LEB128 varint (7 bits a byte, low bits first) */
static inline int
w_var(Writer *w, unsigned long long v)
{
    char b[10];
    int n = 0;
    do {
        b[n] = (char)(v & 0x7f);
        v >>= 7;
        if (v)
            b[n] |= (char)0x80;
        n++;
    } while (v);
    return w_put(w, b, n);
}

static inline int
w_fixed64(Writer *w, long long v)
{
    char b[8];
    put_le(b, (unsigned long long)v, 8);
    return w_put(w, b, 8);
}

/* '(' and a count */
static inline int
w_tuple(Writer *w, Py_ssize_t n)
{
    return (w_byte(w, '(') < 0 || w_var(w, (unsigned long long)n) < 0) ? -1 : 0;
}

static int
w_slot(Writer *w, char tag, long long v, Py_ssize_t off)
{
    if (w->nids == w->capids) {
        Py_ssize_t cap = w->capids ? w->capids * 2 : 16;
        IdSlot *s = PyMem_Realloc(w->ids, (size_t)cap * sizeof(IdSlot));
        if (s == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        w->ids = s;
        w->capids = cap;
    }
    w->ids[w->nids].off = off;
    w->ids[w->nids].val = v;
    w->ids[w->nids].tag = tag;
    w->nids++;
    return 0;
}

/* a fresh identifier: '@', its tag, an 8-byte slot (ranked at the end) */
static int
w_id(Writer *w, char tag, long long v)
{
    if (w_byte(w, '@') < 0 || w_byte(w, tag) < 0 || w_slot(w, tag, v, w->len) < 0)
        return -1;
    return w_fixed64(w, v);
}

/* a str: 's', its length in bytes (a varint), UTF-8; a fresh identifier's marker (model.fingerprint's
 * "\u27e8" tag, 12 digits, "\u27e9") as w_id */
static int
w_str(Writer *w, PyObject *s)
{
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    PyObject *enc = NULL;
    if (u == NULL) { /* lone surrogates: as marshal writes them */
        PyErr_Clear();
        enc = PyUnicode_AsEncodedString(s, "utf-8", "surrogatepass");
        if (enc == NULL)
            return -1;
        u = PyBytes_AS_STRING(enc);
        n = PyBytes_GET_SIZE(enc);
    }
    if (n == 19 && memcmp(u, "\xe2\x9f\xa8", 3) == 0 && u[3] >= 'A' && u[3] <= 'Z' &&
        memcmp(u + 16, "\xe2\x9f\xa9", 3) == 0) {
        long long v = 0;
        int digits = 1;
        for (int i = 4; i < 16; i++) {
            if (u[i] < '0' || u[i] > '9') {
                digits = 0;
                break;
            }
            v = v * 10 + (u[i] - '0');
        }
        if (digits) {
            Py_XDECREF(enc);
            return w_id(w, u[3], v);
        }
    }
    int r = (w_byte(w, 's') < 0 || w_var(w, (unsigned long long)n) < 0 || w_put(w, u, n) < 0) ? -1 : 0;
    Py_XDECREF(enc);
    return r;
}

/* a primitive (is_primitive) */
static int
w_prim(Writer *w, PyObject *x)
{
    PyTypeObject *t = Py_TYPE(x);
    if (x == Py_None)
        return w_byte(w, 'N');
    if (t == &PyBool_Type)
        return w_byte(w, x == Py_True ? 'T' : 'F');
    if (t == &PyLong_Type) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (!overflow)
            return (w_byte(w, 'i') < 0 || w_var(w, ((unsigned long long)v << 1) ^ (unsigned long long)(v >> 63)) < 0) ? -1 : 0; /* zigzag */
        PyObject *digits = PyObject_Str(x);
        if (digits == NULL)
            return -1;
        Py_ssize_t n;
        const char *d = PyUnicode_AsUTF8AndSize(digits, &n);
        int r = (d == NULL || w_byte(w, 'I') < 0 || w_var(w, (unsigned long long)n) < 0 || w_put(w, d, n) < 0) ? -1 : 0;
        Py_DECREF(digits);
        return r;
    }
    if (t == &PyFloat_Type) {
        char b[8];
        if (PyFloat_Pack8(PyFloat_AS_DOUBLE(x), b, 1) < 0)
            return -1;
        return (w_byte(w, 'f') < 0 || w_put(w, b, 8) < 0) ? -1 : 0;
    }
    if (t == &PyUnicode_Type)
        return w_str(w, x);
    if (t == &PyBytes_Type)
        return (w_byte(w, 'b') < 0 || w_var(w, (unsigned long long)PyBytes_GET_SIZE(x)) < 0 ||
                w_put(w, PyBytes_AS_STRING(x), PyBytes_GET_SIZE(x)) < 0) ? -1 : 0;
    PyErr_Format(PyExc_TypeError, "model._native: %s is not a primitive", t->tp_name);
    return -1;
}

/* a canonical form (nested tuples of primitives) */
static int
w_form(Writer *w, PyObject *f)
{
    if (is_primitive(Py_TYPE(f)))
        return w_prim(w, f);
    if (Py_TYPE(f) != &PyTuple_Type) {
        PyErr_Format(PyExc_TypeError, "model._native: a canonical form holds a %s", Py_TYPE(f)->tp_name);
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(f);
    if (w_tuple(w, n) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++)
        if (w_form(w, PyTuple_GET_ITEM(f, i)) < 0)
            return -1;
    return 0;
}

/* write the form that canon (or the Python walk) built; steals f */
static int
w_built(Writer *w, PyObject *f)
{
    if (f == NULL)
        return -1;
    int r = w_form(w, f);
    Py_DECREF(f);
    return r;
}

/* append another writer's bytes and id slots */
static int
w_append(Writer *w, const char *buf, Py_ssize_t len, const IdSlot *ids, Py_ssize_t nids)
{
    Py_ssize_t base = w->len;
    if (w_put(w, buf, len) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < nids; i++)
        if (w_slot(w, ids[i].tag, ids[i].val, ids[i].off + base) < 0)
            return -1;
    return 0;
}

/* a set or frozenset whose elements are all ints or all strings (exact types: their own
 * canonical forms, sorted naturally, as canon_sorted with sorted_keys orders them), written
 * without building its form: 0, or -1 on an error, or 1 when it is not such a set */
static int
enc_plain_set(PyObject *tag, PyObject *x, Writer *w)
{
    Py_ssize_t n = PySet_GET_SIZE(x);
    if (n == 0)
        return (w_tuple(w, 1) < 0 || w_str(w, tag) < 0) ? -1 : 0;
    PyObject *items = PySequence_List(x);
    if (items == NULL)
        return -1;
    n = PyList_GET_SIZE(items);
    PyTypeObject *kt = Py_TYPE(PyList_GET_ITEM(items, 0));
    int plain = kt == &PyLong_Type || kt == &PyUnicode_Type;
    for (Py_ssize_t i = 1; plain && i < n; i++)
        plain = Py_TYPE(PyList_GET_ITEM(items, i)) == kt;
    int r = 1;
    if (plain) {
        r = (PyList_Sort(items) < 0 || w_tuple(w, n + 1) < 0 || w_str(w, tag) < 0) ? -1 : 0;
        for (Py_ssize_t i = 0; r == 0 && i < n; i++)
            r = w_prim(w, PyList_GET_ITEM(items, i));
    }
    Py_DECREF(items);
    return r;
}

static int enc(PyObject *x, int dt, RefMap *memo, Writer *w);

static inline int
enc_elem(PyObject *e, int dt, RefMap *memo, Writer *w)
{
    if (is_primitive(Py_TYPE(e)))
        return w_prim(w, e);
    return enc(e, dt, memo, w);
}

/* canon_object, written: the fields, then the __dict__ entries not skipped, by name */
static int
enc_object(PyObject *x, int dt, RefMap *memo, PyObject *info, Writer *w)
{
    PyObject *names = PyTuple_GET_ITEM(info, 2);
    PyObject *skip = PyTuple_GET_ITEM(info, 3);
    PyObject *bags = PyTuple_GET_ITEM(info, 4);
    int has_dict = PyTuple_GET_ITEM(info, 5) == Py_True;
    PyObject *descrs = PyTuple_GET_ITEM(info, 6);
    PyObject *bag_flags = PyTuple_GET_ITEM(info, 7);
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    int any_bags = PySet_GET_SIZE(bags) > 0;
    if (!has_dict) { /* slots only: each field written as it is read */
        if (w_tuple(w, 1 + n) < 0 || w_str(w, PyTuple_GET_ITEM(info, 1)) < 0)
            return -1;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *v = field_value(x, names, descrs, i);
            if (v == NULL)
                return -1;
            int r;
            if (any_bags && PyTuple_GET_ITEM(bag_flags, i) == Py_True)
                r = w_built(w, canon_sorted(s_multiset, v, dt, memo, sort_by_repr));
            else
                r = enc_elem(v, dt, memo, w);
            Py_DECREF(v);
            if (r < 0)
                return -1;
        }
        return 0;
    }
    PyObject *values = PyList_New(n);
    PyObject *entries = NULL; /* [(name, value)] of the __dict__, sorted, skipped names left out */
    if (values == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = field_value(x, names, descrs, i);
        if (v == NULL)
            goto fail;
        PyList_SET_ITEM(values, i, v);
    }
    if (has_dict && (entries = dict_entries(x, skip)) == NULL)
        goto fail;
    if (w_tuple(w, 1 + n + (entries ? PyList_GET_SIZE(entries) : 0)) < 0 || w_str(w, PyTuple_GET_ITEM(info, 1)) < 0)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(values, i);
        int r;
        if (any_bags && PyTuple_GET_ITEM(bag_flags, i) == Py_True)
            r = w_built(w, canon_sorted(s_multiset, v, dt, memo, sort_by_repr));
        else
            r = enc_elem(v, dt, memo, w);
        if (r < 0)
            goto fail;
    }
    for (Py_ssize_t j = 0; entries && j < PyList_GET_SIZE(entries); j++) {
        PyObject *pair = PyList_GET_ITEM(entries, j);
        if (w_tuple(w, 2) < 0 || w_form(w, PyTuple_GET_ITEM(pair, 0)) < 0 ||
            enc_elem(PyTuple_GET_ITEM(pair, 1), dt, memo, w) < 0)
            goto fail;
    }
    Py_DECREF(values);
    Py_XDECREF(entries);
    return 0;
fail:
    Py_DECREF(values);
    Py_XDECREF(entries);
    return -1;
}

/* a value (frozen attrs): its bytes, written once per object (k_bytes, as k_forms for canon) */
static int
enc_value(PyObject *x, int dt, PyObject *info, Writer *w)
{
    PyObject *cache = k_bytes[dt];
    PyObject *key = memo_key(x);
    if (key == NULL)
        return -1;
    PyObject *e = PyDict_GetItemWithError(cache, key);
    if (e != NULL && PyTuple_GET_ITEM(e, 0) == x) {
        Py_DECREF(key);
        PyObject *b = PyTuple_GET_ITEM(e, 1), *ids = PyTuple_GET_ITEM(e, 2);
        return w_append(w, PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), (const IdSlot *)PyBytes_AS_STRING(ids),
                        PyBytes_GET_SIZE(ids) / (Py_ssize_t)sizeof(IdSlot));
    }
    if (PyErr_Occurred()) {
        Py_DECREF(key);
        return -1;
    }
    Writer own = {0};
    RefMap own_memo; /* its own back-references: context-free */
    refmap_init(&own_memo);
    int r = enc_object(x, dt, &own_memo, info, &own);
    refmap_free(&own_memo);
    if (r == 0)
        r = w_append(w, own.buf, own.len, own.ids, own.nids);
    if (r == 0) {
        PyObject *b = PyBytes_FromStringAndSize(own.buf, own.len);
        PyObject *ids = b ? PyBytes_FromStringAndSize((const char *)own.ids, own.nids * (Py_ssize_t)sizeof(IdSlot)) : NULL;
        PyObject *entry = ids ? PyTuple_Pack(3, x, b, ids) : NULL;
        Py_XDECREF(b);
        Py_XDECREF(ids);
        if (entry == NULL)
            r = -1;
        else {
            if (PyDict_GET_SIZE(cache) >= k_forms_max)
                PyDict_Clear(cache);
            r = PyDict_SetItem(cache, key, entry);
            Py_DECREF(entry);
        }
    }
    w_free(&own);
    Py_DECREF(key);
    return r;
}

/* canon, written */
static int
enc(PyObject *x, int dt, RefMap *memo, Writer *w)
{
    PyTypeObject *t = Py_TYPE(x);
    if (is_primitive(t))
        return w_prim(w, x);
    TypeEntry *te = type_entry(t);
    if (te == NULL)
        return -1;
    if (te->tag != NULL)
        return w_built(w, fresh_form(x, te->tag)); /* its marker, as w_str reads it */
    if (t == &PyTuple_Type) {
        Py_ssize_t n = PyTuple_GET_SIZE(x);
        Py_ssize_t i;
        for (i = 0; i < n; i++)
            if (!is_primitive(Py_TYPE(PyTuple_GET_ITEM(x, i))))
                break;
        if (i == n)
            return w_form(w, x);
        if (w_tuple(w, n + 1) < 0 || w_str(w, s_tuple) < 0)
            return -1;
        for (i = 0; i < n; i++)
            if (enc_elem(PyTuple_GET_ITEM(x, i), dt, memo, w) < 0)
                return -1;
        return 0;
    }
    if (t == &PyFrozenSet_Type) {
        int r = enc_plain_set(s_frozenset, x, w);
        return r != 1 ? r : w_built(w, canon(x, dt, memo));
    }
    PyObject *info = NULL;
    if (t != &PyList_Type && t != &PyDict_Type && t != &PySet_Type && t != &PyMethod_Type &&
        (PyObject *)t != k_deque_type) {
        info = canon_info(t, dt);
        if (info == NULL)
            return -1;
        int kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(info, 0));
        if (kind == K_PYTHON)
            return w_built(w, canon_fn(x, dt, memo));
        if (kind == K_VALUE)
            return enc_value(x, dt, info, w);
    }
    /* a mutable object: a back-reference when met again */
    Py_ssize_t ref = refmap_get(memo, x);
    if (ref >= 0) /* ("ref", ref): the int as w_prim writes it (zigzag varint) */
        return (w_tuple(w, 2) < 0 || w_str(w, s_ref) < 0 || w_byte(w, 'i') < 0 ||
                w_var(w, (unsigned long long)ref << 1) < 0) ? -1 : 0;
    if (refmap_add(memo, x) < 0)
        return -1;
    int r;
    if (t == &PyList_Type || (PyObject *)t == k_deque_type) {
        /* a list is read in place (nothing the walk runs changes it); a deque through a list */
        PyObject *items = t == &PyList_Type ? Py_NewRef(x) : PySequence_List(x);
        if (items == NULL)
            return -1;
        Py_ssize_t n = PyList_GET_SIZE(items);
        r = (w_tuple(w, n + 1) < 0 || w_str(w, t == &PyList_Type ? s_list : s_deque) < 0) ? -1 : 0;
        for (Py_ssize_t i = 0; r == 0 && i < n; i++)
            r = enc_elem(PyList_GET_ITEM(items, i), dt, memo, w);
        Py_DECREF(items);
        return r;
    }
    if (t == &PyDict_Type) {
        if (PyDict_GET_SIZE(x) == 0)
            return (w_tuple(w, 1) < 0 || w_str(w, s_dicttag) < 0) ? -1 : 0;
        PyObject *keys = PyDict_Keys(x);
        if (keys == NULL)
            return -1;
        Py_ssize_t n = PyList_GET_SIZE(keys);
        PyTypeObject *kt = Py_TYPE(PyList_GET_ITEM(keys, 0));
        Py_ssize_t i = 1;
        if (kt == &PyLong_Type || kt == &PyUnicode_Type)
            for (; i < n && Py_TYPE(PyList_GET_ITEM(keys, i)) == kt; i++)
                ;
        if ((kt == &PyLong_Type || kt == &PyUnicode_Type) && i == n) {
            /* all ints or all strings: their own canonical forms, in natural order (sorted_keys) */
            r = (PyList_Sort(keys) < 0 || w_tuple(w, n + 1) < 0 || w_str(w, s_dicttag) < 0) ? -1 : 0;
            for (i = 0; r == 0 && i < n; i++) {
                PyObject *k = PyList_GET_ITEM(keys, i);
                PyObject *v = PyDict_GetItemWithError(x, k);
                Py_XINCREF(v);
                r = (v == NULL || w_tuple(w, 2) < 0 || w_prim(w, k) < 0 ||
                     enc_elem(v, dt, memo, w) < 0) ? -1 : 0;
                Py_XDECREF(v);
            }
            Py_DECREF(keys);
            return r;
        }
        Py_DECREF(keys);
        PyObject *canon_key = PyDict_New();
        PyObject *snapshot = canon_key ? PyDict_Copy(x) : NULL;
        PyObject *sorted = NULL;
        r = snapshot ? 0 : -1;
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (r == 0 && PyDict_Next(snapshot, &pos, &k, &v)) {
            PyObject *ck = canon_elem(k, dt, memo);
            r = (ck == NULL || PyDict_SetItem(canon_key, ck, v) < 0) ? -1 : 0;
            Py_XDECREF(ck);
        }
        if (r == 0) {
            PyObject *keys = PyDict_Keys(canon_key);
            sorted = keys ? sorted_keys(keys) : NULL;
            Py_XDECREF(keys);
            r = sorted ? 0 : -1;
        }
        if (r == 0) {
            Py_ssize_t n = PyList_GET_SIZE(sorted);
            r = (w_tuple(w, n + 1) < 0 || w_str(w, s_dicttag) < 0) ? -1 : 0;
            for (Py_ssize_t i = 0; r == 0 && i < n; i++) {
                PyObject *ck = PyList_GET_ITEM(sorted, i);
                r = (w_tuple(w, 2) < 0 || w_form(w, ck) < 0 ||
                     enc_elem(PyDict_GetItem(canon_key, ck), dt, memo, w) < 0) ? -1 : 0;
            }
        }
        Py_XDECREF(sorted);
        Py_XDECREF(snapshot);
        Py_XDECREF(canon_key);
        return r;
    }
    if (t == &PySet_Type) {
        r = enc_plain_set(s_set, x, w);
        return r != 1 ? r : w_built(w, canon_sorted(s_set, x, dt, memo, sorted_keys));
    }
    if (t == &PyMethod_Type) {
        PyObject *name = PyObject_GetAttr(x, s_name);
        if (name == NULL)
            return -1;
        r = (w_tuple(w, 3) < 0 || w_str(w, s_method) < 0 || w_form(w, name) < 0 ||
             enc(PyMethod_GET_SELF(x), dt, memo, w) < 0) ? -1 : 0;
        Py_DECREF(name);
        return r;
    }
    return enc_object(x, dt, memo, info, w);
}

static int
slot_order(const void *a, const void *b)
{
    const IdSlot *p = *(const IdSlot *const *)a, *q = *(const IdSlot *const *)b;
    if (p->tag != q->tag)
        return p->tag < q->tag ? -1 : 1;
    return p->val < q->val ? -1 : p->val > q->val;
}

/* every slot gets its identifier's rank (1, 2, ...) among the distinct identifiers of its tag */
static int
w_rank(Writer *w)
{
    if (w->nids == 0)
        return 0;
    IdSlot **order = PyMem_Malloc((size_t)w->nids * sizeof(IdSlot *));
    if (order == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < w->nids; i++)
        order[i] = &w->ids[i];
    qsort(order, (size_t)w->nids, sizeof(IdSlot *), slot_order);
    long long rank = 0;
    for (Py_ssize_t i = 0; i < w->nids; i++) {
        const IdSlot *s = order[i];
        if (i == 0 || s->tag != order[i - 1]->tag)
            rank = 1;
        else if (s->val != order[i - 1]->val)
            rank++;
        put_le(w->buf + s->off, (unsigned long long)rank, 8);
    }
    PyMem_Free(order);
    return 0;
}

static PyObject *
native_canonical_bytes(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int dt = canonical_args(args, nargs, "canonical_bytes(x, drop_time)");
    if (dt < 0)
        return NULL;
    RefMap memo;
    refmap_init(&memo);
    Writer w = {0};
    PyObject *out = NULL;
    if (enc(args[0], dt, &memo, &w) == 0 && w_rank(&w) == 0)
        out = PyBytes_FromStringAndSize(w.buf, w.len);
    w_free(&w);
    refmap_free(&memo);
    return out;
}

static PyMethodDef methods[] = {
    {"deep_copy", (PyCFunction)(void (*)(void))native_deep_copy, METH_FASTCALL,
     "deep_copy(x, memo): model.statecopy.py_deep_copy, in C"},
    {"canonical", (PyCFunction)(void (*)(void))native_canonical, METH_FASTCALL,
     "canonical(x, drop_time): model.fingerprint.py_canonical, in C"},
    {"configure_copy", native_configure_copy, METH_VARARGS, "set the copier's per-class decisions (model.statecopy)"},
    {"canonical_bytes", (PyCFunction)(void (*)(void))native_canonical_bytes, METH_FASTCALL,
     "canonical_bytes(x, drop_time): model.fingerprint.encode(py_canonical(x, drop_time)), in C"},
    {"configure_canonical", native_configure_canonical, METH_VARARGS,
     "set the canonicalizer's per-class decisions (model.fingerprint)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "model._native", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__native(void)
{
#define INTERN(var, text)                                   \
    if ((var = PyUnicode_InternFromString(text)) == NULL) \
        return NULL;
    INTERN(s_append, "append");
    INTERN(s_extend, "extend");
    INTERN(s_maxlen, "maxlen");
    INTERN(s_dict, "__dict__");
    INTERN(s_name, "__name__");
    INTERN(s_qualname, "__qualname__");
    INTERN(s_dicttag, "dict");
    INTERN(s_tuple, "tuple");
    INTERN(s_frozenset, "frozenset");
    INTERN(s_list, "list");
    INTERN(s_deque, "deque");
    INTERN(s_set, "set");
    INTERN(s_ref, "ref");
    INTERN(s_method, "method");
    INTERN(s_fn, "fn");
    INTERN(s_multiset, "multiset");
#undef INTERN
    if ((empty_tuple = PyTuple_New(0)) == NULL)
        return NULL;
    return PyModule_Create(&module);
}
