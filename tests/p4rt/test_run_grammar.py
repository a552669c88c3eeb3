"""simple_switch_grpc's command-line grammar (p4sim.run_grammar), rule by rule as BMv2 1.15.5's
options_parse.cpp / target_parser.cpp / simple_switch_grpc main.cpp and boost's default style
have it.  Each refusal has its accepted control next to it."""
from __future__ import annotations

import pytest

from p4sim import run_grammar as g

GRPC = ["--", "--grpc-server-addr", "127.0.0.1:1"]


def general_error(argv, dialect="simple_switch_grpc"):
    with pytest.raises(g.GrammarError) as e:
        g.check(argv, dialect)
    assert e.value.text.startswith(g.GENERAL_ERROR + "\n" + g.USAGE) and e.value.status == 1
    assert e.value.stream == "stdout"  # BMv2 prints it on std::cout


def target_error(argv, message, dialect="simple_switch_grpc"):
    with pytest.raises(g.GrammarError) as e:
        g.check(argv, dialect)
    assert e.value.text.splitlines() == ["Calling target program-options parser", message, g.TARGET_ERROR]
    assert e.value.status == 1


def test_every_target_option_before_the_double_dash_is_a_general_parse_error():
    for o in g.SIMPLE_SWITCH_GRPC_TARGET:
        value = [] if o.kind == "flag" else ["1"]
        general_error(["--no-p4", f"--{o.name}", *value])
        # control: after '--' it is accepted (TLS needs its cert and key to be complete)
        tail = ["--grpc-server-cert", "c", "--grpc-server-key", "k"] if o.name == "grpc-server-ssl" else []
        if o.name not in ("grpc-server-cert", "grpc-server-key"):
            g.check(["--no-p4", "--", f"--{o.name}", *value, *tail])


def test_every_general_option_after_the_double_dash_is_a_target_parse_error():
    for o in g.GENERAL:
        if o.hidden:
            continue
        target_error(["--no-p4", "--", f"--{o.name}", "1"], f"unrecognised option '--{o.name}'")


def test_unknown_options_on_either_side():
    general_error(["--no-p4", "--bogus"])
    general_error(["--no-p4", "-x"])
    target_error(["--no-p4", "--", "--bogus", "1"], "unrecognised option '--bogus'")


def test_boost_forms_of_values_are_accepted():
    args = g.check(["--no-p4", "-i0@veth0", "--interface=1@veth1", "-i", "2@veth2", "--thrift-port=9091",
                    "-Linfo", "--log-console", "--dev", "7", "--", "--grpc-server-addr=127.0.0.1:5", "--cpu", "64"])
    assert args.general["interface"] == [(0, "veth0"), (1, "veth1"), (2, "veth2")]
    assert args.general["thrift-port"] == 9091 and args.general["device-id"] == 7  # --dev: unique prefix
    assert args.target == {"grpc-server-addr": "127.0.0.1:5", "cpu-port": 64}


def test_an_ambiguous_prefix_is_refused():
    general_error(["--no-p4", "--log", "x"])           # log-console, log-file, log-level ...
    target_error(["--no-p4", "--", "--grpc-server-c", "x"],
                 "option '--grpc-server-c' is ambiguous and matches '--grpc-server-cacert', and '--grpc-server-cert'")
    g.check(["--no-p4", "--", "--grpc-server-cert", "x"])  # control: the exact name wins


def test_values_missing_malformed_or_given_to_a_flag():
    general_error(["--no-p4", "--device-id"])
    general_error(["--no-p4", "--device-id", "--log-console"])  # a known option is not a value
    general_error(["--no-p4", "--device-id", "x"])
    general_error(["--no-p4", "-i", "veth0"])          # PORT@IFACE
    general_error(["--no-p4=1"])
    target_error(["--no-p4", "--", "--cpu-port", "x"], "the argument ('x') for option '--cpu-port' is invalid")
    target_error(["--no-p4", "--", "--cpu-port"], "the required argument for option '--cpu-port' is missing")
    target_error(["--no-p4", "--", "--grpc-server-ssl=1"], "option '--grpc-server-ssl' does not take any arguments")


def test_repeats_only_for_interfaces():
    general_error(["--no-p4", "--device-id", "1", "--device-id", "2"])
    general_error(["--no-p4", "--log-console", "--log-console"])
    target_error(["--no-p4", "--", "--cpu-port", "1", "--cpu-port", "2"],
                 "option '--cpu-port' cannot be specified more than once")
    assert len(g.check(["--no-p4", "-i", "1@a", "-i", "2@b"]).general["interface"]) == 2


def test_config_and_no_p4():
    with pytest.raises(g.GrammarError) as e:
        g.check(["--thrift-port", "1"])
    assert e.value.text.startswith("Error: please specify an input JSON configuration file")
    assert g.check(["prog.json", *GRPC]).config == "prog.json"
    # --no-p4 with a .json positional: ignored with BMv2's warning
    args = g.check(["--no-p4", "prog.json", *GRPC])
    assert args.config is None and "ignoring input config" in args.warnings[0]
    # --no-p4 with a positional that is no .json file: handed to the target parser, which refuses it
    target_error(["--no-p4", "prog.txt"], "too many positional options have been specified on the command line")
    target_error(["--no-p4", "--", "--cpu-port", "5", "stray"],
                 "too many positional options have been specified on the command line")


def test_logging_rules():
    with pytest.raises(g.GrammarError, match="--log-console and --log-file are exclusive"):
        g.check(["--no-p4", "--log-console", "--log-file", "x"])
    with pytest.raises(g.GrammarError, match="Invalid value loud for --log-level"):
        g.check(["--no-p4", "-L", "loud"])
    with pytest.raises(g.GrammarError, match="must be greater than 0"):
        g.check(["--no-p4", "--log-file", "x", "--log-file-max-size", "0"])
    args = g.check(["--no-p4", "--log-flush"])
    assert "Ignoring --log-flush option because --log-file not specified" in args.warnings


def test_packet_in_clears_the_interfaces_as_bmv2_does():
    args = g.check(["--no-p4", "-i", "0@veth0", "--packet-in", "ipc:///tmp/x.ipc"])
    assert "interface" not in args.general and args.general["packet-in"] == "ipc:///tmp/x.ipc"


def test_target_side_checks_of_simple_switch_grpc():
    with pytest.raises(g.GrammarError, match="--grpc-server-key is required"):
        g.check(["--no-p4", "--", "--grpc-server-ssl", "--grpc-server-cert", "c"])
    with pytest.raises(g.GrammarError, match="not a valid CPU port"):
        g.check(["--no-p4", "--", "--cpu-port", "0"])
    with pytest.raises(g.GrammarError, match="max-mc-groups must be between 1 and 2147483647"):
        g.check(["--no-p4", "--", "--max-mc-groups", "0"])
    args = g.check(["--no-p4", "--", "--grpc-server-cert", "c"])
    assert "provided .pem files will be ignored" in args.warnings[0]


def test_p4sim_target_options_exist_only_in_the_p4sim_dialect():
    argv = ["--no-p4", "--", "--clock", "virtual", "--control-addr", "127.0.0.1:2", "--seed", "3"]
    assert g.check(argv, "p4sim").target["clock"] == "virtual"
    target_error(argv, "unrecognised option '--clock'")              # real BMv2 has none of them
    general_error(["--no-p4", "--clock", "virtual"], dialect="p4sim")  # and they are target options


def test_help_and_version_exit_zero():
    with pytest.raises(g.Exit) as e:
        g.check(["--help"])
    assert "Target specific options" in e.value.text and "--priority-queues" in e.value.text
    with pytest.raises(g.Exit):
        g.check(["-v"])


def test_the_module_checks_a_command_line_like_the_binary(capsys):
    assert g.main(["--", "--no-p4", "--", "--priority-queues", "8"]) == 0
    assert g.main(["--", "--no-p4", "--priority-queues", "8"]) == 1
    assert capsys.readouterr().out.startswith(g.GENERAL_ERROR)
