"""Splitting assert-style tests so that verdicts are decided in the trusted parent.

A test such as ``assert set(similar(a, b)) == set([1, 2])`` is cut into *probes* -- the largest
sub-expressions that touch a name the candidate provides (here ``similar(a, b)``) -- and a *verdict
expression* that the parent evaluates with the real builtins after the probe values come back as plain data
(``set(__probe_0) == set([1, 2])``). The candidate never sees the expected values, cannot shadow ``set``,
and no candidate ``__eq__`` ever runs in the parent.

A name counts as the candidate's when it is not a builtin and not an allowed standard-library module, or
when the caller lists it in ``entry_points`` (MBPP task 126 asks for a function named ``sum``).
Tests that are not a single ``assert`` statement cannot be split and run inside the sandbox (``inline``).
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import warnings
from dataclasses import dataclass

# Modules a test may use in the parent (pure, no I/O). ``sys`` is here for ``sys.getsizeof``.
PARENT_MODULES = frozenset(
    {
        "math",
        "cmath",
        "re",
        "collections",
        "itertools",
        "functools",
        "heapq",
        "bisect",
        "operator",
        "string",
        "decimal",
        "fractions",
        "statistics",
        "sys",
        "array",
        "copy",
    }
)
_BUILTIN_NAMES = frozenset(dir(builtins)) - {"__import__", "eval", "exec", "open", "compile", "input", "breakpoint"}
_SAFE_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.BitAnd, ast.BitOr, ast.BitXor)
PROBE_PREFIX = "__probe_"


@dataclass(frozen=True)
class SplitTest:
    source: str
    probes: tuple[str, ...]  # candidate sub-expressions, evaluated in the sandbox
    verdict: object | None  # compiled verdict expression for the parent, or None for an inline test
    modules: tuple[str, ...]  # modules the verdict expression needs

    @property
    def inline(self) -> bool:
        return self.verdict is None


def _parse(source: str) -> ast.Module:
    with warnings.catch_warnings():  # MBPP code has invalid escapes like '\d'; not ours to warn about
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return ast.parse(source)


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


class _Splitter:
    def __init__(self, entry_points: frozenset[str]):
        self.entry_points = entry_points
        self.probes: list[str] = []

    def parent_name(self, name: str) -> bool:
        if name in self.entry_points:
            return False
        return name in _BUILTIN_NAMES or name in PARENT_MODULES

    def touches_candidate(self, node: ast.AST) -> bool:
        return any(not self.parent_name(n) for n in _names(node))

    def probe(self, node: ast.expr) -> ast.expr:
        k = len(self.probes)
        self.probes.append(ast.unparse(node))
        return ast.copy_location(ast.Name(id=f"{PROBE_PREFIX}{k}", ctx=ast.Load()), node)

    def visit(self, node: ast.expr) -> ast.expr:
        if not self.touches_candidate(node):
            return node
        if isinstance(node, ast.Compare):
            node.left = self.visit(node.left)
            node.comparators = [self.visit(c) for c in node.comparators]
            return node
        if isinstance(node, ast.BoolOp):
            node.values = [self.visit(v) for v in node.values]
            return node
        if isinstance(node, ast.UnaryOp):
            node.operand = self.visit(node.operand)
            return node
        if isinstance(node, ast.BinOp) and isinstance(node.op, _SAFE_BINOPS):
            node.left = self.visit(node.left)
            node.right = self.visit(node.right)
            return node
        if isinstance(node, ast.IfExp):
            node.test, node.body, node.orelse = self.visit(node.test), self.visit(node.body), self.visit(node.orelse)
            return node
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and not any(isinstance(e, ast.Starred) for e in node.elts):
            node.elts = [self.visit(e) for e in node.elts]
            return node
        if isinstance(node, ast.Dict) and None not in node.keys:
            node.keys = [self.visit(k) for k in node.keys]
            node.values = [self.visit(v) for v in node.values]
            return node
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice):
            node.value = self.visit(node.value)
            node.slice = self.visit(node.slice)
            return node
        if isinstance(node, ast.Call) and self._parent_callable(node.func):
            if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                return self.probe(node)
            node.args = [self.visit(a) for a in node.args]
            for kw in node.keywords:
                kw.value = self.visit(kw.value)
            return node
        return self.probe(node)

    def _parent_callable(self, func: ast.expr) -> bool:
        if isinstance(func, ast.Name):
            return self.parent_name(func.id)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            return func.value.id in PARENT_MODULES and func.value.id not in self.entry_points
        return False


@functools.lru_cache(maxsize=65536)
def split_test(source: str, entry_points: frozenset[str] = frozenset()) -> SplitTest:
    """Split one test statement. Cached: the same tests are scored for many completions."""
    try:
        tree = _parse(source)
    except SyntaxError:
        return SplitTest(source, (), None, ())
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        return SplitTest(source, (), None, ())
    if any(isinstance(n, (ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)) for n in ast.walk(tree)):
        return SplitTest(source, (), None, ())
    splitter = _Splitter(entry_points)
    expr = splitter.visit(tree.body[0].test)
    # Whatever remains for the parent must only use builtins, allowed modules and probe values.
    leftover = {n for n in _names(expr) if not n.startswith(PROBE_PREFIX)}
    if any(not splitter.parent_name(n) for n in leftover) or any(
        isinstance(n, (ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)) for n in ast.walk(expr)
    ):
        return SplitTest(source, (), None, ())
    code = compile(ast.fix_missing_locations(ast.Expression(expr)), "<test>", "eval")
    modules = tuple(sorted(n for n in leftover if n in PARENT_MODULES))
    return SplitTest(source, tuple(splitter.probes), code, modules)


@functools.cache
def _module(name: str):
    return importlib.import_module(name)


def evaluate_verdict(split: SplitTest, values: list) -> bool:
    """Evaluate the verdict expression in the parent; raises what the comparison raises."""
    namespace = {"__builtins__": builtins}
    for name in split.modules:
        namespace[name] = _module(name)
    for k, value in enumerate(values):
        namespace[f"{PROBE_PREFIX}{k}"] = value
    return bool(eval(split.verdict, namespace))  # noqa: S307 - trusted test source over plain-data values


def entry_points_from(reference_code: str, tests: list[str]) -> frozenset[str]:
    """Names a task asks the candidate to define that shadow builtins (e.g. MBPP task 126's ``sum``).

    Only such names need listing: any non-builtin name in a test is the candidate's already.
    """
    try:
        tree = _parse(reference_code)
    except SyntaxError:
        return frozenset()
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))} | {
        t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)
    }
    used = set()
    for t in tests:
        try:
            used |= _names(_parse(t))
        except SyntaxError:
            continue
    return frozenset(n for n in defined & used if n in _BUILTIN_NAMES or n in PARENT_MODULES)
