"""The command-line grammar of ``simple_switch_grpc``, as strict as the real binary.

BMv2 parses its argv twice, both times with boost::program_options' default command-line
style (``src/bm_sim/options_parse.cpp``, ``src/bm_sim/target_parser.cpp``,
``targets/simple_switch_grpc/main.cpp``, behavioral-model 1.15.5):

1. the *general* bm options (``-i``, ``--thrift-port``, ``--device-id``, ``--log-console`` ...)
   with the JSON config as first positional argument; everything after ``--`` is positional and
   handed on.  Any error here -- an unknown option, a target option before ``--``, a missing or
   malformed value, a repeated option -- prints "Error while parsing command line arguments",
   the usage, and exits 1 (on stdout, as BMv2 does);
2. the *target* options (``--grpc-server-addr``, ``--cpu-port``, ``--priority-queues``,
   ``--drop-port`` and the TLS ones ...).  Here BMv2 prints boost's own message followed by
   "Target parser returned an error" -- and then carries on with *every* target option at its
   default, which hides the mistake.  This grammar exits 1 there instead: stricter than the
   real binary, never more lenient, so whatever passes here also means on BMv2 what it says.

Both passes follow boost's rules: long options match by unambiguous prefix, ``--opt=value`` or
``--opt value`` (a value may not be another known option), short options take adjacent or next
values, flags take none, and an option given twice is an error unless it composes (``-i``).

``dialect="simple_switch_grpc"`` accepts exactly the real target options; ``dialect="p4sim"``
adds p4sim's own target options (``--clock``, ``--control-addr``, ``--seed``, ``--backend``) after ``--``,
so a command line built for BMv2 is checked against BMv2's grammar alone.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

INT_MAX = 2**31 - 1
USAGE = "Usage: SWITCH_NAME [options] <path to JSON config file>"
GENERAL_ERROR = "Error while parsing command line arguments"
TARGET_ERROR = "Target parser returned an error"
TARGET_HINT = ("Your target comes with its own command line parser, make sure you separate "
               "general bmv2 options from, target specific options with '--'")
DIALECTS = ("simple_switch_grpc", "p4sim")


@dataclass(frozen=True)
class Opt:
    """One option: ``kind`` is flag (no value), str, int, uint or size (unsigned 64-bit)."""

    name: str
    kind: str
    short: Optional[str] = None
    help: str = ""
    composing: bool = False
    hidden: bool = False


GENERAL = (
    Opt("help", "flag", "h", "this message (target options too)"),
    Opt("interface", "iface", "i", "PORT@IFACE: attach a Linux interface as a port (repeatable)", composing=True),
    Opt("pcap", "implicit", help="[=DIR] (BMv2) pcap files per interface -- refused by p4sim"),
    Opt("use-files", "int", help="(BMv2) packets from pcap files -- refused by p4sim"),
    Opt("packet-in", "str", help="ipc://PATH: every port over one nanomsg socket (-i is then ignored)"),
    Opt("thrift-port", "int", help="TCP port of the runtime (Thrift) server, default 9090"),
    Opt("device-id", "size", help="device id (default 0)"),
    Opt("nanolog", "str", help="(BMv2) nanomsg event log -- refused by p4sim"),
    Opt("log-console", "flag", help="log to the console"),
    Opt("log-file", "str", help="log to this file"),
    Opt("log-level", "str", "L", "trace, debug, info, warn, error or off"),
    Opt("log-flush", "flag", help="with --log-file: flush after every message"),
    Opt("log-file-max-size", "size", help="with --log-file: bytes before rotation (default 5 MB)"),
    Opt("log-file-max-files", "size", help="with --log-file: rotated files kept (default 3)"),
    Opt("notifications-addr", "str", help="(BMv2) nanomsg notifications -- refused by p4sim"),
    Opt("restore-state", "str", help="(BMv2) restore state from a file -- refused by p4sim"),
    Opt("dump-packet-data", "size", help="(BMv2) log packet bytes -- refused by p4sim"),
    Opt("version", "flag", "v", "print the version"),
    Opt("json-version", "flag", help="(BMv2) BMv2 JSON version -- refused by p4sim"),
    Opt("no-p4", "flag", help="start without a program (push one over P4Runtime)"),
    Opt("max-port-count", "int", help="most interfaces the switch takes (default 512)"),
    # registered but hidden: boost still matches them (and prefixes of them) by name
    Opt("input-config", "str", hidden=True),
    Opt("to-pass-further", "str", composing=True, hidden=True),
)

SIMPLE_SWITCH_GRPC_TARGET = (
    Opt("disable-swap", "flag", help="disable JSON swapping at run time"),
    Opt("grpc-server-addr", "str", help="P4Runtime address (p4sim default 127.0.0.1:9559; BMv2 0.0.0.0:9559)"),
    Opt("grpc-server-ssl", "flag", help="TLS on the P4Runtime server"),
    Opt("grpc-server-cacert", "str", help="PEM file: CA to verify clients against"),
    Opt("grpc-server-cert", "str", help="PEM file: server certificate"),
    Opt("grpc-server-key", "str", help="PEM file: server key"),
    Opt("grpc-server-with-client-auth", "flag", help="require a valid client certificate (mTLS)"),
    Opt("cpu-port", "uint", help="port of P4Runtime packet-in/out (not 0)"),
    Opt("drop-port", "uint", help="egress_spec value that drops (default 511)"),
    Opt("dp-grpc-server-addr", "str", help="(BMv2) data-plane gRPC -- refused by p4sim"),
    Opt("priority-queues", "uint", help="strict-priority queues per port (default 1)"),
    Opt("max-mc-groups", "uint", help="(BMv2) multicast group limit -- refused by p4sim"),
    Opt("max-l1-entries", "uint", help="(BMv2) L1 multicast entry limit -- refused by p4sim"),
    Opt("max-l2-entries", "uint", help="(BMv2) L2 multicast entry limit -- refused by p4sim"),
    Opt("load-modules", "str", help="(BMv2) extern modules (.so) -- refused by p4sim"),
)

P4SIM_TARGET = (
    Opt("clock", "str", help="p4sim: wall (default) or virtual (time moves only over --control-addr)"),
    Opt("control-addr", "str", help="p4sim: HOST:PORT of the target-control side channel"),
    Opt("seed", "int", help="p4sim: seed of the random() extern"),
    Opt("backend", "str", help="p4sim: python (the reference) or native (generated C; falls back to "
        "the reference, with a warning, for what it cannot run); default $P4SIM_BACKEND, else python"),
)

# Valid for the real binary, but p4sim has no such machinery: refused by name, never ignored.
REFUSED = {
    "pcap": "no pcap capture", "use-files": "no pcap-file ports", "nanolog": "no nanomsg event log",
    "notifications-addr": "no nanomsg notifications (digests go over P4Runtime)",
    "restore-state": "no state files", "dump-packet-data": "no packet dumps in the log",
    "json-version": "its device config is p4sim's own format, not BMv2 JSON",
    "dp-grpc-server-addr": "no data-plane gRPC service", "load-modules": "no extern modules",
    "max-mc-groups": "no multicast table limits", "max-l1-entries": "no multicast table limits",
    "max-l2-entries": "no multicast table limits",
}


class GrammarError(Exception):
    """A command line the real binary rejects: ``text`` is what it prints, ``status`` its exit."""

    def __init__(self, text: str, status: int = 1, stream: str = "stdout", detail: str = "") -> None:
        super().__init__(text)
        self.text, self.status, self.stream = text, status, stream
        self.detail = detail  # what exactly was wrong, where BMv2's text does not say (p4sim prints it)


class _BoostError(Exception):
    """boost::program_options' exception text (what the target parser prints)."""


class Exit(Exception):
    """A successful early exit (--help, --version): print ``text``, exit 0."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _find(opts: Sequence[Opt], token: str) -> Opt:
    """boost's long-name lookup with allow_guessing: exact name, else the one prefix match."""
    for o in opts:
        if o.name == token:
            return o
    matches = [o for o in opts if o.name.startswith(token)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise _BoostError(f"unrecognised option '--{token}'")
    # boost's wording: the alternatives sorted, "and" before the last one
    names = sorted(f"'--{o.name}'" for o in matches)
    raise _BoostError(f"option '--{token}' is ambiguous and matches {', '.join(names[:-1])}, and {names[-1]}")


def _known(opts: Sequence[Opt], token: str) -> bool:
    """Would boost take ``token`` for one of ``opts`` (so it cannot be a value)?"""
    if token.startswith("--") and len(token) > 2:
        try:
            _find(opts, token[2:].split("=", 1)[0])
            return True
        except _BoostError:
            return False
    if token.startswith("-") and len(token) > 1:
        return any(o.short == token[1] for o in opts)
    return False


def _convert(o: Opt, value: str, canon: str) -> Any:
    bad = _BoostError(f"the argument ('{value}') for option '{canon}' is invalid")
    if o.kind in ("str", "implicit"):
        return value
    if o.kind == "iface":
        port, at, ifname = value.partition("@")
        if not at:
            raise bad
        try:
            return (int(port), ifname)
        except ValueError:
            raise bad from None
    try:
        number = int(value.strip(), 10)
    except ValueError:
        raise bad from None
    # boost's lexical_cast wraps "-1" into an unsigned; this grammar refuses it (stricter)
    limits = {"int": (-2**31, INT_MAX), "uint": (0, 2**32 - 1), "size": (0, 2**64 - 1)}[o.kind]
    if not limits[0] <= number <= limits[1]:
        raise bad
    return number


def _tokenize(opts: Sequence[Opt], argv: Sequence[str]) -> tuple[list[tuple[Opt, Optional[str], str]], list[str]]:
    """boost's default_style tokenizer: (option, raw value, canonical name) list + positionals."""
    found: list[tuple[Opt, Optional[str], str]] = []
    positional: list[str] = []
    i = 0
    argv = list(argv)

    def take_next(o: Opt, canon: str) -> str:
        nonlocal i
        if i + 1 >= len(argv) or _known(opts, argv[i + 1]):
            raise _BoostError(f"the required argument for option '{canon}' is missing")
        i += 1
        return argv[i]

    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            positional.extend(argv[i + 1:])
            break
        if tok.startswith("--") and len(tok) > 2:
            name, eq, value = tok[2:].partition("=")
            o = _find(opts, name)
            canon = f"--{o.name}"
            if o.kind == "flag":
                if eq:
                    raise _BoostError(f"option '{canon}' does not take any arguments")
                found.append((o, None, canon))
            elif o.kind == "implicit":  # boost's implicit_value: a value only after '='
                found.append((o, value if eq else ".", canon))
            elif eq:
                if not value:
                    raise _BoostError(f"the argument for option '{canon}' should follow immediately after the equal sign")
                found.append((o, value, canon))
            else:
                found.append((o, take_next(o, canon), canon))
        elif tok.startswith("-") and len(tok) > 1:
            rest = tok[1:]
            while rest:  # allow_sticky: -hv = -h -v; -i0@veth0 = -i 0@veth0
                short = [o for o in opts if o.short == rest[0]]
                if not short:
                    raise _BoostError(f"unrecognised option '-{rest[0]}'")
                o, canon = short[0], f"-{rest[0]}"
                if o.kind in ("flag", "implicit"):
                    found.append((o, None if o.kind == "flag" else ".", canon))
                    rest = rest[1:]
                    continue
                found.append((o, rest[1:] if len(rest) > 1 else take_next(o, canon), canon))
                rest = ""
        else:
            positional.append(tok)
        i += 1
    return found, positional


def _store(found: list[tuple[Opt, Optional[str], str]]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for o, raw, canon in found:
        if o.name in values and not o.composing:
            raise _BoostError(f"option '{canon}' cannot be specified more than once")
        value = True if o.kind == "flag" else _convert(o, raw or "", canon)
        if o.composing:
            values.setdefault(o.name, []).append(value)
        else:
            values[o.name] = value
    return values


def _describe(opts: Sequence[Opt], title: str) -> str:
    lines = [f"{title}:"]
    for o in opts:
        if o.hidden:
            continue
        names = (f"-{o.short} [ --{o.name} ]" if o.short else f"--{o.name}")
        if o.kind != "flag":
            names += " arg"
        lines.append(f"  {names:<34} {o.help}")
    return "\n".join(lines) + "\n"


def _general_detail(message: str, target: Sequence[Opt]) -> str:
    """boost's message for a refused general option, plus the fix when the option is a target
    option given before ``--``."""
    import re

    m = re.search(r"'--([\w-]+)'", message)
    if m and m.group(1) in {o.name for o in target}:
        return f"{message}: --{m.group(1)} is a target option; give it after '--'"
    return message


def package_version() -> str:
    """The installed stellar package's version (what ``--version`` prints)."""
    try:
        from importlib.metadata import version

        return version("stellar")
    except Exception:  # noqa: BLE001 - not installed as a package
        return "0.1.0"


def target_options(dialect: str) -> tuple[Opt, ...]:
    if dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect!r} ({', '.join(DIALECTS)})")
    return SIMPLE_SWITCH_GRPC_TARGET + (P4SIM_TARGET if dialect == "p4sim" else ())


def usage(dialect: str = "p4sim") -> str:
    return (f"{USAGE}\n" + _describe(GENERAL, "Options")
            + "This target also comes with its own command line parser, make sure you separate "
              "general bmv2 options from, target specific options with '--'\nTarget specific options:\n"
            + _describe(target_options(dialect), "Target options"))


@dataclass
class RunArgs:
    """A parsed command line: BMv2's general options, its target options, and what BMv2 warns."""

    config: Optional[str]
    no_p4: bool
    general: dict[str, Any]
    target: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def parse(argv: Sequence[str], dialect: str = "p4sim", check_files: bool = True) -> RunArgs:
    """Parse like ``simple_switch_grpc``; raises GrammarError (what the real binary prints and
    its exit status) or Exit (help/version).  ``check_files``: also check what BMv2 checks on
    disk at start (the ``--pcap`` directory), off for a static check of a command line."""
    topts = target_options(dialect)
    try:
        found, positional = _tokenize(GENERAL, argv)
        general = _store(found)
    except _BoostError as err:
        raise GrammarError(f"{GENERAL_ERROR}\n{USAGE}\n{_describe(GENERAL, 'Options')}{TARGET_HINT}",
                           detail=_general_detail(str(err), topts)) from None
    if general.get("help"):
        raise Exit(usage(dialect))
    if general.get("version"):
        raise Exit(f"p4sim {package_version()} (command line of simple_switch_grpc 1.15.5)")
    config = general.pop("input-config", None)
    further = list(general.pop("to-pass-further", []))
    if positional:
        if config is None:
            config, positional = positional[0], positional[1:]
        further += positional
    no_p4 = bool(general.get("no-p4"))
    warnings: list[str] = []
    if not no_p4 and config is None:
        raise GrammarError(f"Error: please specify an input JSON configuration file\n{USAGE}\n"
                           + _describe(GENERAL, "Options"))
    if no_p4 and config is not None:
        # BMv2: a first "positional" that is really an option (after '--') or no .json file is
        # handed to the target parser; a real .json file is ignored with a warning.
        if config.startswith("--") or len(config) <= 2 or not config.endswith(".json"):
            further.insert(0, config)
        else:
            warnings.append("Warning: ignoring input config as '--no-p4' was used")
        config = None
    if general.get("log-console") and "log-file" in general:
        raise GrammarError("Error: --log-console and --log-file are exclusive")
    if "log-level" in general and general["log-level"] not in ("trace", "debug", "info", "warn", "error", "off"):
        raise GrammarError(f"Invalid value {general['log-level']} for --log-level\nRun with -h to see possible values")
    for opt in ("log-flush", "log-file-max-size", "log-file-max-files"):
        if opt in general and "log-file" not in general:
            warnings.append(f"Ignoring --{opt} option because --log-file not specified")
            general.pop(opt)
    if general.get("log-file-max-size") == 0:
        raise GrammarError("Error: --log-file-max-size must be greater than 0")
    if "pcap" in general and check_files and not os.path.isdir(general["pcap"] or "."):
        raise GrammarError(f"Directory '{general['pcap']}' specified with '--pcap' does not exist.")
    if "use-files" in general and "packet-in" in general:
        raise GrammarError("Error: --use-files and --packet-in are exclusive")
    if general.get("max-port-count", 512) < 0:
        raise GrammarError("Invalid --max-port-count argument, cannot be negative")
    if "packet-in" in general:
        general.pop("interface", None)  # BMv2 clears the interface list when --packet-in is given
    try:
        found, extra = _tokenize(topts, further)
        if extra:
            raise _BoostError("too many positional options have been specified on the command line")
        target = _store(found)
    except _BoostError as err:
        raise GrammarError(f"Calling target program-options parser\n{err}\n{TARGET_ERROR}") from None
    if not target.get("grpc-server-ssl"):
        if any(k in target for k in ("grpc-server-cacert", "grpc-server-cert", "grpc-server-key")):
            warnings.append("SSL/TLS is disabled for gRPC server, so provided .pem files will be ignored")
        if target.get("grpc-server-with-client-auth"):
            warnings.append("SSL/TLS is disabled for gRPC server, so cannot request client auth")
    else:
        for need in ("grpc-server-cert", "grpc-server-key"):
            if need not in target:
                raise GrammarError(f"When enabling SSL/TLS for gRPC server, --{need} is required", stream="stderr")
    if target.get("cpu-port") == 0:
        # BMv2 exits 1 without a word; the reason is given here
        raise GrammarError("--cpu-port 0 is not a valid CPU port", stream="stderr")
    for opt in ("max-mc-groups", "max-l1-entries", "max-l2-entries"):
        if opt in target and not 1 <= target[opt] <= INT_MAX:
            raise GrammarError(f"{opt} must be between 1 and {INT_MAX}", stream="stderr")
    return RunArgs(config, no_p4, general, target, warnings)


def check(argv: Sequence[str], dialect: str = "simple_switch_grpc") -> RunArgs:
    """A static check of a built command line (no file checks): raises GrammarError."""
    return parse(argv, dialect, check_files=False)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m p4sim.run_grammar [--dialect D] -- ARGS``: check a command line without
    starting anything; prints what the real binary would and exits with its status."""
    import sys

    argv = list(sys.argv[1:] if argv is None else argv)
    dialect = "simple_switch_grpc"
    if argv[:1] == ["--dialect"]:
        dialect, argv = argv[1], argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    try:
        check(argv, dialect)
    except GrammarError as err:
        print(err.text, file=sys.stdout if err.stream == "stdout" else sys.stderr)
        return err.status
    except Exit as done:
        print(done.text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
