# Generated from autograder/rules/policy.py by `make stubs`: the grader's code,
# which the visible tests use. Learners: nothing to write here. Course staff: edit that file.
"""What the rules forbid, and why: the stages' bans, the refusal tables and the reading's budgets.

Data only: the reader (reader.py and the mixins it is made of) applies these tables to each
file's live code. Each kind of refusal is a way to run a banned built-in that a reading of
the source could not see; ``WHY`` says so to the learner, kind by kind. README.md beside this
file is the same policy in the learner's words.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The files the grader reads (lumen/stages.py's SUBMISSION_FILES).
FILES: tuple[str, ...] = ("embeddings.py", "params.py", "gpt2.py")
#: Your own modules: importing them (``from .embeddings import Embedding``) is always fine.
OWN_MODULES = frozenset({"embeddings", "params", "gpt2"})
#: The package your files live in when you run them yourself (``exercises.embeddings``).
OWN_PACKAGE = "exercises"


@dataclass(frozen=True)
class Ban:
    """What a stage forbids: torch's own version of what its functions build by hand."""

    stage: str
    names: frozenset[str]  # torch's names for it, leading underscores dropped (see _plain)
    routes: frozenset[str]  # torch modules that call it for you: refused under this ban
    ops: frozenset[str]  # the same as recorded while the code runs, normalised (see op_name)
    what: str  # for a message: the banned built-ins, as a learner writes them


BANS: dict[str, Ban] = {
    "embedding": Ban(
        stage="embedding",
        names=frozenset({"embedding", "Embedding", "embedding_bag", "EmbeddingBag",
                         "embedding_bag_forward_only", "embedding_ops"}),
        routes=frozenset({"ao", "quantized", "qat", "quantizable", "quantization"}),
        ops=frozenset({"embedding", "embedding_bag", "embedding_bag_forward_only"}),
        what="PyTorch's own embedding (nn.Embedding, F.embedding, torch.embedding, "
        "F.embedding_bag, nn.EmbeddingBag)",
    ),
    "onehot": Ban(
        stage="onehot",
        names=frozenset({"one_hot"}),
        routes=frozenset({"distributions"}),
        ops=frozenset({"one_hot"}),
        what="PyTorch's own one-hot (F.one_hot)",
    ),
}

#: Why each kind of construct is refused, as the learner reads it. Every kind is a way to run
#: a banned built-in that the grader, reading your source, could not see.
WHY = {
    "code": "it runs code the grader cannot read (a string turned into code, a module or "
    "object loaded by name, a pickle, another program)",
    "names": "it reaches a function by a name computed at run time, which hides from the "
    "grader what your code calls",
    "program": "it reaches into the running program (its frames, objects, memory, loaded "
    "modules, or the calls other code makes), where a built-in can be picked up unnamed",
    "torch": "it uses torch's internals, which reach torch's built-ins without their names",
    "star": "`import *` brings in names the grader cannot see",
    "relative": "it imports a file the grader does not read: only embeddings.py, params.py "
    "and gpt2.py are submitted",
    "redirect": "it changes torch (an attribute of one of its modules or classes set or "
    "deleted, or one of its modules handed on where the grader cannot follow what is done to "
    "it), which the given code and the grader's checks call as it is: leave torch as it is",
}
#: How much of a file the rules read: honest files nest about 12 deep and hold a few thousand
#: parts (AST nodes; 1 MiB of ordinary code, the most a submitted file may be, holds ~80,000).
#: A file past either limit is not read but refused as a whole ("unreadable"), so that no
#: step of the reading is deeper or longer than these allow.
MAX_DEPTH = 100
MAX_NODES = 100_000
#: Characters of a construct, or of its line, quoted in a finding.
SHOWN = 160
WHY["unreadable"] = (
    f"the grader reads a file only within its limits (expressions nested at most {MAX_DEPTH} "
    f"deep, {MAX_NODES:,} parts in all) or as Python parses it, and this one is past them, so "
    "it cannot tell what the file calls: write it plainly")
#: The kinds that make a verdict read from the source unprovable: each "written by hand" test
#: applies all (autograder/suites/bans.py).
EVASIONS: tuple[str, ...] = ("code", "names", "program", "torch", "star", "relative", "import",
                             "redirect", "unreadable")

#: Modules your files may import, and any of their submodules, each name along the way checked
#: against the rules below (``torch.utils`` is refused). Each was read for ways around a ban;
#: the few it has are refused by name (numpy.load, operator.attrgetter, typing.get_type_hints).
ALLOWED_MODULES: tuple[str, ...] = (
    "__future__", "abc", "argparse", "bisect", "cmath", "collections", "contextlib", "copy",
    "dataclasses", "decimal", "enum", "fractions", "functools", "heapq", "itertools", "math",
    "numbers", "numpy", "operator", "random", "re", "statistics", "sys", "textwrap", "time",
    "torch", "typing", "warnings",
)
WHY["import"] = ("the grader has not checked this module for ways around the bans: your three "
                 "files may import only " + ", ".join(ALLOWED_MODULES) + " and each other")
#: What ``sys`` may give: nothing that reaches modules, frames, tracing or the interpreter.
SYS_ALLOWED = frozenset({"stdout", "stderr", "maxsize", "float_info", "int_info",
                         "version_info", "version", "platform", "byteorder", "getsizeof",
                         "hexversion", "float_repr_style", "exit"})
#: Built-ins refused wherever they are named, with the kind of reason.
REFUSED_BUILTINS: dict[str, str] = {
    "eval": "code", "exec": "code", "compile": "code", "__import__": "code",
    "globals": "names", "locals": "names", "vars": "names", "__builtins__": "names",
    "breakpoint": "program",
    "open": "program",  # open('/proc/self/mem', 'r+b') rewrites the running program
}
#: Built-ins that take an attribute name: fine with a constant name, refused otherwise.
ATTRIBUTE_BUILTINS = frozenset({"getattr", "setattr", "delattr"})

#: Names refused as modules you import and as attributes of anything but your own modules and
#: classes (``torch.os``, ``x.__globals__``), each group with the reason it could get around a
#: ban. Single-underscore names are refused too: every one on a module the grader can name
#: (``torch._C``, ``warnings._setoption``), and torch's and numpy's private modules on any
#: other object (``self._VF``: see _MODULE_PRIVATE).
REFUSED: dict[str, str] = {
    # Strings become code, or objects are found by a name held in a string.
    **dict.fromkeys((
        "importlib", "runpy", "code", "codeop", "pickle", "_pickle", "marshal", "copyreg",
        "shelve", "pydoc", "pkgutil", "zipimport", "types",  # types.FunctionType(code, ...)
        "_imp", "imp", "_frozen_importlib", "_frozen_importlib_external", "site", "sysconfig",
        "subprocess", "_posixsubprocess", "os", "posix", "pty", "multiprocessing",
        "concurrent", "webbrowser",  # other programs, started from strings
        "serialization", "from_file", "hub", "package", "jit", "fx", "export", "compiler",
        "onnx", "jiterator",  # torch code compiled or unpickled from strings and files
        "utils",  # torch.utils.cpp_extension compiles C++ from a string; nn.utils as well
        "f2py", "distutils",
        "loader", "load_module", "exec_module", "get_code", "get_data",  # __spec__.loader
        ), "code"),
    # A name computed at run time.
    **dict.fromkeys((
        "attrgetter", "methodcaller", "get_type_hints", "ForwardRef", "make_dataclass",
        "__dict__",
        "__getattribute__", "__getattr__", "__setattr__", "__delattr__"), "names"),
    # The running program: its frames, objects, memory, modules and the calls others make.
    **dict.fromkeys((
        "gc", "inspect", "ctypes", "_ctypes", "ctypeslib", "sys", "builtins", "traceback",
        "linecache", "weakref", "logging", "signal", "faulthandler", "tracemalloc", "atexit",
        "threading", "_thread", "asyncio", "socket", "dis",
        "io", "_io", "codecs", "pathlib", "glob", "shutil", "mmap", "tempfile", "fileinput",
        "zipfile", "tarfile", "gzip", "bz2", "lzma", "DataSource",  # files: /proc/self/mem
        "string",  # string.Formatter().get_field("0.one_hot", (F,), {})
        "settrace", "setprofile", "settrace_all_threads", "setprofile_all_threads",
        "_getframe", "_current_frames", "f_back", "f_locals", "f_globals", "f_builtins",
        "f_code", "f_trace", "tb_frame", "tb_next", "gi_frame", "gi_code", "cr_frame",
        "cr_code", "ag_frame", "ag_code", "co_code", "co_consts", "co_names", "cell_contents",
        "__code__", "__closure__", "__globals__", "__builtins__", "__self__", "__func__",
        "__wrapped__", "__defaults__", "__kwdefaults__", "__subclasses__", "__bases__",
        "__base__", "__mro__", "__traceback__", "__loader__", "__spec__", "__reduce__",
        "__reduce_ex__", "__array_interface__", "__array_struct__",  # memory at any address
        "__cuda_array_interface__",
        "stride_tricks", "lib", "memmap", "fromfile", "tofile", "FileType",
        "overrides", "TorchFunctionMode", "TorchDispatchMode", "__torch_function__",
        "__torch_dispatch__", "DisableTorchFunction", "DisableTorchFunctionSubclass",
        "profiler", "storage", "untyped_storage", "TypedStorage", "UntypedStorage"),
        "program"),
    # torch's internals: the dispatcher and its operators, reached without the Python names.
    **dict.fromkeys((
        "_C", "_VF", "_ops", "ops", "aten", "library", "classes", "distributed", "futures",
        "_dynamo", "_inductor", "_functorch", "_subclasses", "_python_dispatch", "_refs",
        "_prims", "_decomp", "_library", "_higher_order_ops", "_jit_internal", "_utils",
        "_sources", "_tensor", "_numpy", "_core", "_global_forward_hooks",
        "_global_forward_pre_hooks", "_global_backward_hooks", "_global_backward_pre_hooks",
        "_global_module_registration_hooks", "_global_parameter_registration_hooks",
        "_global_buffer_registration_hooks"), "torch"),
}
#: Refused on every object, your own included: frames, code objects, namespaces by name.
ALWAYS = frozenset(name for name, kind in REFUSED.items()
                   if name.startswith(("__", "f_", "tb_", "gi_", "cr_", "ag_", "co_"))
                   or name == "cell_contents")
#: Refused on the modules named and on objects the grader cannot tell (``model.compile()`` is
#: torch.compile, ``a.dump(f)`` numpy's pickle), fine elsewhere (``re.compile``, your own).
MODULE_ONLY: dict[str, tuple[str, tuple[str, ...]]] = {
    "compile": ("code", ("torch",)),
    **{name: ("code", ("torch", "numpy")) for name in (
        "load", "loads", "save", "savez", "savez_compressed", "savetxt", "loadtxt",
        "genfromtxt", "fromregex", "dump", "dumps")},
    "testing": ("code", ("numpy",)),  # numpy.testing.extbuild compiles C from a string
    "core": ("program", ("numpy",)),  # numpy's internals
}
#: Names refused as definitions (``def``, a class attribute, a key of ``type()``'s namespace):
#: intercepting what other code calls, numpy reading memory at an address you give it
#: (``__array_interface__``, also through an attribute hook), names looked up from strings.
REFUSED_DEFINITIONS = frozenset({
    "__torch_function__", "__torch_dispatch__", "__array_interface__", "__array_struct__",
    "__cuda_array_interface__", "__getattr__", "__getattribute__", "__match_args__",
    "__prepare__"})
#: Metaclasses your classes may name: every other one builds a class's namespace at run time.
METACLASSES = frozenset({"ABCMeta", "abc.ABCMeta"})
#: torch's global hooks (register_module_forward_hook, ...): they hand your code every module
#: that any code runs, the grader's included.
GLOBAL_HOOKS = "register_module_"
