"""model.seams call by call: the registry's whole entry right after ``override``, what
``check``/``conflicts``/``original`` answer, and where a seam's definition is bound while it
acts and after."""

import attrs
import pytest

from model import seams  # the only model modules imported at the top: a registry made unusable
from model.errors import FlinkspecError  # by a mutant breaks the other modules' imports, not this file's


def test_the_registry_is_its_tables():
    """The registry's tables as the model declares them (a test of this file first, before any
    other module's seams are looked at)."""
    assert type(seams.SEAMS) is dict and all(type(k) is str and type(v) is seams.Seam for k, v in seams.SEAMS.items())
    assert type(seams._BINDINGS) is dict
    assert seams._ACTIVE == [()]


def test_the_declared_fields_of_a_seam():
    fields = [(a.name, a.default, a.repr, a.eq, a.init) for a in attrs.fields(seams.Seam)]
    assert fields == [("name", attrs.NOTHING, True, True, True), ("definition", attrs.NOTHING, True, True, True),
                      ("description", attrs.NOTHING, True, True, True), ("flink_key", None, True, True, True),
                      ("origin", None, True, True, True), ("owner", None, False, False, True),
                      ("attribute", "", False, True, True), ("installed", None, False, False, True),
                      ("safe", None, False, False, True)]
    assert seams.Seam.__slots__ and attrs.has(seams.Seam)


def _answer(call, *args):
    """What the registry answers: ``("ok", result)`` or its refusal ``("refused", message)``."""
    try:
        return "ok", call(*args)
    except (seams.SeamError, FlinkspecError) as e:
        return "refused", str(e)


@pytest.fixture
def registered():
    """Seams registered by a test, forgotten afterwards."""
    names: list = []
    yield names
    seams.unregister(names)


def test_override_registers_the_whole_entry_and_returns_the_function(registered):
    from model.sharedstateregistry import SharedStateRegistry

    safe = SharedStateRegistry.__dict__["_may_discard"]

    def _never(self, e):
        return False

    got = seams.override("test-state-never", SharedStateRegistry, "_may_discard", "never discards")(_never)
    registered.append("test-state-never")
    assert got is _never
    s = seams.SEAMS["test-state-never"]
    assert (s.name, s.definition, s.description, s.flink_key, s.origin) == (
        "test-state-never", "SharedStateRegistry._may_discard", "never discards", None, None)
    assert (s.owner, s.attribute, s.installed, s.safe) == (SharedStateRegistry, "_may_discard", _never, safe)
    assert seams.check(["test-state-never"]) == ("test-state-never",)
    assert seams.conflicts(["test-state-never"]) is None
    assert seams.original("test-state-never") is safe


class Owner:
    """A class of the model (by its module), with every kind of definition a seam overrides."""

    def plain(self):
        return "plain"

    @staticmethod
    def static(x):
        return ("static", x)

    @classmethod
    def klass(cls, x):
        return ("class", cls.__name__, x)

    @property
    def prop(self):
        return "prop"

    number = 3


Owner.__module__ = "model.owner_for_seams"


class Child(Owner):
    pass


Child.__module__ = "model.owner_for_seams"


def _safe_function(x):
    return ("safe", x)


@pytest.fixture
def model_module():
    """A module of the model holding a function, and another that imported it by name."""
    import sys
    import types

    mod = types.ModuleType("model.fake_for_seams")
    mod.f = _safe_function
    mod.other = len
    user = types.ModuleType("model.fake_user_for_seams")
    user.f = user.g = _safe_function
    outside = types.ModuleType("fake_outside_for_seams")
    outside.f = _safe_function
    sys.modules.update({mod.__name__: mod, user.__name__: user, outside.__name__: outside})
    yield mod, user, outside
    for m in (mod, user, outside):
        sys.modules.pop(m.__name__, None)


def test_a_seam_entrys_defaults_repr_and_equality():
    s = seams.Seam("n", "C.m", "does")
    assert (s.name, s.definition, s.description, s.flink_key, s.origin) == ("n", "C.m", "does", None, None)
    assert (s.owner, s.attribute, s.installed, s.safe) == (None, "", None, None)
    assert repr(s) == "Seam(name='n', definition='C.m', description='does', flink_key=None, origin=None)"
    # what is installed and replaced, and the owner, do not make two entries differ; the attribute does
    assert seams.Seam("n", "C.m", "does", owner=Owner, installed=1, safe=2) == s
    assert seams.Seam("n", "C.m", "does", attribute="m") != s
    assert seams.Seam("n", "C.m", "does", flink_key="FLINK-1") != s
    with pytest.raises(AttributeError):
        s.name = "other"  # frozen
    assert not hasattr(s, "__dict__")  # slotted


def test_which_modules_are_the_models():
    assert seams._is_model("model") and seams._is_model("model.cluster")
    assert not seams._is_model("models") and not seams._is_model("xmodel.a") and not seams._is_model("properties.model")


def test_the_definitions_of_each_kind(model_module):
    mod, _, outside = model_module
    assert seams._definition(Owner, "plain") == ("Owner.plain", Owner.__dict__["plain"], None)
    for attr, kind in (("static", staticmethod), ("klass", classmethod), ("prop", property)):
        assert seams._definition(Owner, attr) == (f"Owner.{attr}", Owner.__dict__[attr], kind)
    assert seams._definition(mod, "f") == ("model.fake_for_seams.f", _safe_function, None)


@pytest.mark.parametrize("owner, attribute, message", [
    ("outside", "f", "fake_outside_for_seams is not a module of the model (model.*): only the model's definitions "
                     "can be overridden"),
    ("mod", "other", "module model.fake_for_seams defines no function 'other' to override"),
    ("mod", "missing", "module model.fake_for_seams defines no function 'missing' to override"),
    (3, "x", "3 is neither a class nor a module of the model"),
    (dict, "get", "dict is not a class of the model (model.*): only the model's definitions can be overridden"),
    (Owner, "missing", "Owner defines no method 'missing' to override"),
    (Child, "plain", "Child defines no method 'plain' to override (it is defined in Owner: override it there)"),
    (Child, "__hash__", "Child defines no method '__hash__' to override (it is defined in object: override it there)"),
    (Owner, "number", "Owner.number is not a method (a int): only functions, methods and properties can be overridden"),
])
def test_a_definition_that_cannot_be_overridden(model_module, owner, attribute, message):
    mod, _, outside = model_module
    owner = {"mod": mod, "outside": outside}.get(owner, owner) if isinstance(owner, str) else owner
    with pytest.raises(seams.SeamError) as info:
        seams._definition(owner, attribute)
    assert str(info.value) == message


@pytest.mark.parametrize("name, description, message", [
    ("", "d", "a seam's name must be a non-empty string without surrounding spaces, not ''"),
    ("  ", "d", "a seam's name must be a non-empty string without surrounding spaces, not '  '"),
    (" x", "d", "a seam's name must be a non-empty string without surrounding spaces, not ' x'"),
    ("x ", "d", "a seam's name must be a non-empty string without surrounding spaces, not 'x '"),
    (7, "d", "a seam's name must be a non-empty string without surrounding spaces, not 7"),
    ("x", "", "seam 'x': a description (what the change does) is required"),
    ("x", " ", "seam 'x': a description (what the change does) is required"),
    ("x", None, "seam 'x': a description (what the change does) is required"),
])
def test_a_bad_name_or_description_is_refused(name, description, message):
    with pytest.raises(seams.SeamError) as info:
        seams.override(name, Owner, "plain", description)
    assert str(info.value) == message
    assert name not in seams.SEAMS


def test_override_of_each_kind_registers_its_installed_definition(registered, model_module):
    mod, _, _ = model_module

    def repl(*a):
        return "replaced"

    for name, owner, attr, kind in (("t-kind-plain", Owner, "plain", None), ("t-kind-static", Owner, "static", staticmethod),
                                    ("t-kind-class", Owner, "klass", classmethod), ("t-kind-prop", Owner, "prop", property),
                                    ("t-kind-fn", mod, "f", None)):
        assert seams.override(name, owner, attr, "d")(repl) is repl
        registered.append(name)
        s = seams.SEAMS[name]
        safe = vars(owner)[attr] if owner is mod else owner.__dict__[attr]
        assert s.safe is safe and s.owner is owner and s.attribute == attr, name
        if kind is None:
            assert s.installed is repl, name
        else:
            assert type(s.installed) is kind and (s.installed.fget if kind is property else s.installed.__func__) is repl
    assert seams.original("t-kind-plain") is Owner.__dict__["plain"]
    assert seams.original("t-kind-static") is Owner.__dict__["static"].__func__
    assert seams.original("t-kind-class") is Owner.__dict__["klass"].__func__
    assert seams.original("t-kind-prop") is Owner.__dict__["prop"].fget
    assert seams.original("t-kind-fn") is _safe_function
    assert seams.known_bugs()[-5:] == ("t-kind-plain", "t-kind-static", "t-kind-class", "t-kind-prop", "t-kind-fn")
    assert seams.known_bugs() == tuple(seams.SEAMS)


def test_the_flink_key_and_origin_of_a_seam(registered):
    seams.override("FLINK-99999", Owner, "plain", "d")(lambda self: 0)
    registered.append("FLINK-99999")
    seams.override("t-keyed", Owner, "static", "d", flink_key="FLINK-1", origin="design.py")(lambda x: 0)
    registered.append("t-keyed")
    seams.override("t-design", Owner, "klass", "d", origin="design.py")(lambda cls, x: 0)
    registered.append("t-design")
    assert (seams.SEAMS["FLINK-99999"].flink_key, seams.SEAMS["FLINK-99999"].origin) == ("FLINK-99999", None)
    assert (seams.SEAMS["t-keyed"].flink_key, seams.SEAMS["t-keyed"].origin) == ("FLINK-1", "design.py")
    assert (seams.SEAMS["t-design"].flink_key, seams.SEAMS["t-design"].origin) == (None, "design.py")
    with pytest.raises(seams.SeamError) as info:
        seams.override("t-design", Owner, "prop", "again")(lambda self: 0)
    assert str(info.value) == "seam 't-design' is already registered (by design.py, overriding Owner.klass)"
    with pytest.raises(seams.SeamError) as info:
        seams.override("FLINK-99999", Owner, "prop", "again")(lambda self: 0)
    assert str(info.value) == "seam 'FLINK-99999' is already registered (by the model, overriding Owner.plain)"
    with pytest.raises(seams.SeamError) as info:
        seams.override("t-not-callable", Owner, "prop", "d")(3)
    assert str(info.value) == "seam 't-not-callable': the replacement of Owner.prop must be a function, not 3"
    assert "t-not-callable" not in seams.SEAMS


def test_check_and_conflicts_answer_call_by_call(registered):
    for name, attr in (("t-a", "plain"), ("t-b", "plain"), ("t-c", "static")):
        seams.override(name, Owner, attr, "d")(lambda *a: 0)
        registered.append(name)
    assert seams.check([]) == () and seams.check(("t-a", "t-c")) == ("t-a", "t-c")
    assert seams.check(["t-c", "t-a"]) == ("t-c", "t-a")
    assert seams.conflicts(("t-a", "t-c")) is None and seams.conflicts(()) is None
    assert seams.conflicts(("t-a", "t-c", "t-b")) == "seams 't-a' and 't-b' both override Owner.plain"
    assert seams.conflicts(("nope", "t-a", "nope")) is None  # an unknown name is check's to refuse
    assert seams.conflicts(("nope", "t-a", "t-b")) == "seams 't-a' and 't-b' both override Owner.plain"
    with pytest.raises(FlinkspecError) as info:
        seams.check(("t-b", "t-a"))
    assert str(info.value) == ("seams=['t-b', 't-a']: seams 't-b' and 't-a' both override Owner.plain; "
                               "a run switches on one change per definition")
    with pytest.raises(FlinkspecError) as info:
        seams.check(("t-a", "zz-none", "aa-none"))
    assert str(info.value).startswith("unknown seam(s) ['aa-none', 'zz-none']; known: ")
    assert str(info.value).endswith(", t-a, t-b, t-c")
    for bad in ("t-a", ("t-a", 1), [None]):
        with pytest.raises(FlinkspecError) as info:
            seams.check(bad)
        assert str(info.value) == f"seams must be a list of seam names, not {bad!r}"
    with pytest.raises(seams.SeamError) as info:
        seams.original("nope")
    assert str(info.value).startswith("unknown seam 'nope'; registered: ") and "t-a, t-b, t-c" in str(info.value)


def test_a_module_functions_bindings_and_the_block_that_installs_it(registered, model_module):
    mod, user, outside = model_module

    def repl(x):
        return ("replaced", x)

    seams.override("t-fn", mod, "f", "d")(repl)
    registered.append("t-fn")
    assert "t-fn" not in seams._BINDINGS
    got = seams._bindings("t-fn")
    assert type(got) is tuple and len(got) == 3
    assert set(got) == {(mod, "f"), (user, "f"), (user, "g")}  # not the module outside the model
    assert seams._BINDINGS["t-fn"] is got and seams._bindings("t-fn") is got  # computed once
    assert seams._ACTIVE[0] == ()
    with seams.active(("t-fn",)):
        assert seams._ACTIVE[0] == ("t-fn",)
        assert mod.f is repl and user.f is repl and user.g is repl and outside.f is _safe_function
        assert _answer(seams.unregister, ["t-fn"]) == ("refused", "seam 't-fn' is acting: it cannot be unregistered now")
        assert "t-fn" in seams.SEAMS and "t-fn" in seams._BINDINGS
        with seams.active(()):
            assert seams._ACTIVE[0] == () and mod.f is _safe_function and user.g is _safe_function
        assert seams._ACTIVE[0] == ("t-fn",) and mod.f is repl and user.g is repl
        with seams.active(("t-fn",)):  # the same names: nothing to do
            assert mod.f is repl
        assert mod.f is repl
    assert seams._ACTIVE[0] == () and mod.f is _safe_function and user.f is _safe_function
    assert _answer(seams.unregister, ["t-fn", "never-registered"]) == ("ok", None)
    registered.remove("t-fn")
    assert "t-fn" not in seams.SEAMS and "t-fn" not in seams._BINDINGS


def test_a_methods_binding_and_a_block_left_by_an_exception(registered):
    def repl(self):
        return "replaced"

    seams.override("t-m", Owner, "plain", "d")(repl)
    registered.append("t-m")
    assert seams._bindings("t-m") == ((Owner, "plain"),)
    o = Owner()
    with pytest.raises(KeyError):
        with seams.active(("t-m",)):
            assert o.plain() == "replaced"
            raise KeyError("x")
    assert o.plain() == "plain" and seams._ACTIVE[0] == ()


def test_within_acts_while_the_method_runs(registered):
    def repl(self):
        return "replaced"

    seams.override("t-w", Owner, "plain", "d")(repl)
    registered.append("t-w")

    class Run:
        def __init__(self, names):
            self.seams = names
            self.o = Owner()

        @seams.within
        def step(self, a, b=0):
            """A step."""
            return self.o.plain(), seams._ACTIVE[0], a, b

    assert Run.step.__name__ == "step" and Run.step.__doc__ == "A step."
    assert Run(("t-w",)).step(1, b=2) == ("replaced", ("t-w",), 1, 2)
    assert Run(()).step(1) == ("plain", (), 1, 0)
    assert Owner().plain() == "plain" and seams._ACTIVE[0] == ()
    with seams.active(("t-w",)):
        assert Run(("t-w",)).step(5) == ("replaced", ("t-w",), 5, 0)
        assert Run(()).step(5) == ("plain", (), 5, 0)
        assert Owner().plain() == "replaced"


def test_unregister_forgets_a_seam_and_its_bindings_call_by_call():
    n = "t-unregister-only"
    assert _answer(seams.override(n, Owner, "plain", "d"), lambda self: 0)[0] == "ok"
    assert _answer(seams._bindings, n) == ("ok", ((Owner, "plain"),))
    assert n in seams.SEAMS and n in seams._BINDINGS
    assert _answer(seams.unregister, [n]) == ("ok", None)
    assert n not in seams.SEAMS and n not in seams._BINDINGS
    # registered again (no bindings computed yet), then forgotten: nothing left either
    assert _answer(seams.override(n, Owner, "plain", "d"), lambda self: 0)[0] == "ok"
    assert _answer(seams.unregister, (n, "t-never")) == ("ok", None)
    assert n not in seams.SEAMS and n not in seams._BINDINGS
    assert _answer(seams.unregister, []) == ("ok", None)
