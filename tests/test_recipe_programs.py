"""How each program a recipe may run reads its arguments, at the boundaries of every reading
(natbench.duts.recipes.programs; docs/recipes.md, "Programs"): which options natbench knows, which argument a value
may be, where the options end, and a use natbench does not know refused in one line naming file, line and field.

Each case is one side of one condition of a reader: the word just inside and just outside what it accepts."""

from __future__ import annotations

import pytest

from natbench.duts.recipes import parse_recipe
from natbench.duts.recipes.shell import ShellStructureError, Slot, analyze, value_problem
from natbench.duts.recipes.values import RUNTIME
from natbench.errors import RecipeError


def slot(template: str) -> Slot:
    (found,) = analyze(template)
    return found


def refused(template: str, why: str) -> None:
    with pytest.raises(ShellStructureError) as info:
        analyze(template)
    assert why in str(info.value), str(info.value)


def read(template: str) -> None:
    """A command natbench reads (no placeholder: nothing to return, nothing refused)."""
    assert analyze(template) == ()


# -- where a data program's options end -----------------------------------------------------------------------------


def test_a_value_after_double_dash_may_start_with_a_dash_before_it_may_not() -> None:
    assert slot("grep -e {{ x }} -- f").dash_first  # the word just before '--' is still read for options
    assert not slot("grep -e a -- {{ x }}").dash_first
    assert slot("grep a - {{ x }}").dash_first  # a lone '-' (standard input) ends no options


def test_a_value_glued_into_an_option_word_is_only_the_argument_of_a_long_options_equals_sign() -> None:
    s = slot("jool --pool6={{ x }}")
    assert s.place == "an argument of jool" and not s.dash_first
    for template in ("conntrack -{{ x }}", "conntrack -L{{ x }}", "conntrack -L={{ x }}", "grep -e{{ x }} f",
                     "jool --{{ x }}", "jool --pool6{{ x }}", "tee '-'{{ x }}", "modprobe -{{ x }} jool"):  # fmt: skip
        refused(template, "stands in an option of")
    assert slot("grep -- -{{ x }} f").place == "an argument of grep"  # after '--': an operand
    assert slot("conntrack -L -p {{ x }}").dash_first  # a word of its own: the dash rule
    assert slot("ip link set {{ x }}-a up").dash_first
    read("conntrack -L -p udp")  # option words without a value


# -- operands: modprobe ---------------------------------------------------------------------------------------------


def test_modprobe_takes_the_options_natbench_knows_and_module_names() -> None:
    read("modprobe jool")
    read("modprobe -r -q jool")
    assert slot("modprobe {{ m }}").place == "an argument of modprobe"
    assert slot("modprobe -r {{ m }}").place == "an argument of modprobe"
    refused("modprobe -C f jool", "modprobe is given the option '-C'")
    read("modprobe -r -- jool")  # '--' ends its options


# -- echo and test: options and operators a value could complete -------------------------------------------------


@pytest.mark.parametrize(
    "template",
    ["echo -{{ x }} > f", "echo -n{{ x }} > f", "echo -E{{ x }} > f", "echo '-'{{ x }} > f", "echo -n -{{ x }} > f",
     "echo -n -e -{{ x }} > f", "echo '-n' -{{ x }} > f"],
)  # fmt: skip
def test_a_value_glued_after_a_dash_where_echo_reads_its_options_is_refused(template: str) -> None:
    refused(template, "stands in echo's options: glued to a '-' its letters could choose -n or -e")


@pytest.mark.parametrize(
    "template",
    ["echo -x{{ x }} > f", "echo a -{{ x }} > f", "echo -n a -{{ x }} > f", "echo x-{{ x }} > f", "echo {{ x }} > f",
     "echo -- -{{ x }} > f"],
)  # fmt: skip
def test_a_value_after_echos_options_or_after_text_that_is_no_option_is_written(template: str) -> None:
    (found,) = analyze(template)
    assert found.place == "text echo writes"


def test_echo_without_a_value_reads_any_options() -> None:
    read("echo -n -x > f")
    read("echo -n > f")
    read("echo - > f")  # a lone dash: no option, and no value glued to it


@pytest.mark.parametrize("template", ["[ -{{ x }} a ]", "test -{{ x }} a", "[ a = b -o -{{ x }} c ]", "[ --{{ x }} ]"])
def test_a_value_glued_after_a_dash_in_tests_operands_is_refused(template: str) -> None:
    refused(template, "glued to a '-' it could choose one")


def test_a_value_in_tests_operands_not_after_a_dash_is_data() -> None:
    for template in ("[ x-{{ x }} = a ]", "[ {{ x }} = a ]", "[ -n {{ x }} ]", "test a{{ x }} = b"):
        assert slot(template).place.startswith("an argument of"), template
    assert slot("[ {{ x }} = a ]").dash_first  # a word of its own: the dash rule
    read("[ -f a ]")


# -- printf ---------------------------------------------------------------------------------------------------------


def test_printf_needs_its_format_first_written_in_the_recipe() -> None:
    read("printf 'a\\n' > f")
    refused("printf", "printf's format must be the recipe's own text, first")
    refused("printf {{ x }}", "printf's format must be the recipe's own text")
    refused("printf -v v '%s' a", "printf's format must be the recipe's own text")


def test_a_bare_printf_in_a_recipe_is_one_error_naming_file_line_and_field() -> None:
    text = "recipe: t\nsteps:\n  setup:\n    - printf\n  teardown:\n    - echo bye\n"
    with pytest.raises(RecipeError) as info:
        parse_recipe(text, "r.yaml")
    e = info.value
    assert (e.file, e.line, e.field) == ("r.yaml", 4, "steps.setup[0].run")
    assert "printf's format must be the recipe's own text" in e.message and "\n" not in str(e)


# -- nft ------------------------------------------------------------------------------------------------------------


def test_nft_reads_its_known_options_then_one_line_of_its_rule_language() -> None:
    read("nft -a list ruleset")
    read("nft add table ip t")
    read("nft -")  # a lone '-' is no option
    read("nft -- list ruleset")
    refused("nft --bogus list ruleset", "nft is given the option '--bogus'")
    refused("nft --bogus", "nft is given the option '--bogus'")  # the last word is read too
    assert slot("nft {{ x }}").written  # a value first: a rule word


def test_nft_reads_a_value_glued_into_a_word_starting_with_a_dash_as_options_before_double_dash() -> None:
    refused("nft -{{ x }} list ruleset", "stands in an option of nft")  # x = f: nft -f list
    refused("nft add rule ip t c meta mark set -{{ x }}", "stands in an option of nft")  # getopt permutes
    assert slot("nft -- add rule ip t c meta mark set -{{ x }}").place == "a word of nft's rule"


def test_nft_reads_a_value_as_the_file_or_include_path_it_names() -> None:
    for template in ("nft -f {{ x }}", "nft --file {{ x }}", "nft -I {{ x }} -f /etc/nftables.conf",
                     "nft --includepath {{ x }} -f f"):  # fmt: skip
        s = slot(template)
        assert s.place == "an argument of nft" and not s.written, template


# -- ip -------------------------------------------------------------------------------------------------------------


def test_ip_reads_its_known_options() -> None:
    read("ip -4 -br addr show")
    assert slot("ip -n {{ ns }} link set eth0 up").place == "an argument of ip"
    assert slot("ip -netns {{ ns }} link set eth0 up").place == "an argument of ip"
    refused("ip -b f link show", "ip is given the option '-b'")
    refused("ip -x", "ip is given the option '-x'")  # the last word is read as an option too


def test_ip_without_an_object_or_command_is_read() -> None:
    read("ip")
    read("ip -4")
    read("ip link")
    read("ip -6 route")


def test_ip_knows_its_objects_and_commands_written_in_the_recipe() -> None:
    refused("ip vrf show", "ip vrf: natbench knows the objects")
    refused("ip {{ x }} set dev eth0 up", "is ip's object")
    refused("ip link frob dev eth0", "ip link frob: natbench knows the commands")
    refused("ip link {{ x }} dev eth0", "is ip's command")


def test_only_ip_netns_exec_runs_a_command_and_it_needs_a_namespace_and_a_program() -> None:
    ns, dev = analyze("ip netns exec {{ ns }} ip link set {{ dev }} up")
    assert (ns.place, dev.place) == ("an argument of ip", "an argument of ip")
    read("ip netns exec ns true")
    refused("ip netns exec ns", "ip netns exec needs a namespace and a program")
    refused("ip netns exec", "ip netns exec needs a namespace and a program")
    assert slot("ip netns add {{ ns }}").place == "an argument of ip"  # another command of netns runs nothing
    refused("ip link exec ns ip link show", "ip link exec: natbench knows the commands")  # exec is netns's only


# -- iptables -------------------------------------------------------------------------------------------------------


def test_iptables_takes_a_value_only_as_the_argument_of_a_known_option() -> None:
    assert slot("iptables -A c -o {{ x }} -j ACCEPT").place == "an argument of iptables"
    refused("iptables -A c -j {{ x }}", "stands where iptables reads no value")
    refused("iptables -A c {{ x }}", "stands where iptables reads no value")


def test_iptables_takes_a_value_glued_to_a_long_option_and_its_equals_sign_only() -> None:
    assert slot("iptables -A c -m comment --comment={{ x }}").place == "an argument of iptables"
    refused("iptables -A c --comment{{ x }}", "stands where iptables reads no value")  # the value names the option
    refused("iptables -A c --to{{ x }} 1", "stands where iptables reads no value")
    refused("iptables -A c -s={{ x }}", "stands where iptables reads no value")  # a short option has no '='
    refused("iptables -A c --modprobe={{ x }}", "stands where iptables reads no value")
    refused("iptables -A c '--comment='{{ x }}", "stands where iptables reads no value")  # written bare


def test_ip6tables_reads_like_iptables() -> None:
    assert slot("ip6tables -A c -o {{ x }} -j ACCEPT").place == "an argument of ip6tables"
    refused("ip6tables -A c -j {{ x }}", "stands where ip6tables reads no value")


# -- pfctl (getopt) -------------------------------------------------------------------------------------------------


def test_pfctl_takes_values_as_the_arguments_of_its_value_options_and_as_operands() -> None:
    assert slot("pfctl -f {{ x }}").place == "an argument of pfctl"
    assert slot("pfctl -t t -Tadd {{ x }}").place == "an argument of pfctl"  # -T's argument glued: x an operand
    assert slot("pfctl -t t -T add {{ x }}").place == "an argument of pfctl"
    read("pfctl -sr")
    read("pfctl -s rules")


def test_pfctl_takes_no_value_where_its_own_text_goes() -> None:
    refused("pfctl -D {{ x }}", "is the argument of pfctl -D")
    refused("pfctl -D ext={{ x }} -f f", "is the argument of pfctl -D")
    refused("pfctl -s {{ x }}", "is the argument of pfctl -s")
    refused("pfctl -f{{ x }}", "stands in an option of pfctl")
    refused("pfctl -W {{ x }}", "pfctl is given the option -W, which natbench does not know")
    refused("pfctl -f a -D {{ x }}", "is the argument of pfctl -D")  # one argument per option


def test_pfctl_reads_a_quoted_option_or_one_glued_to_a_value_as_the_option_it_is() -> None:
    refused("pfctl '-D' {{ x }}", "is the argument of pfctl -D")  # the shell removes the quotes
    refused("pfctl ''-D {{ x }}", "is the argument of pfctl -D")
    refused("pfctl '-W' {{ x }}", "pfctl is given the option -W")
    refused("pfctl -{{ x }}", "stands in an option of pfctl")  # the value would choose the option letters
    refused("pfctl '-'{{ x }}", "stands in an option of pfctl")


# -- sysctl ---------------------------------------------------------------------------------------------------------


def test_sysctl_takes_a_value_only_after_a_literal_setting_name_and_equals_sign() -> None:
    s = slot("sysctl -w net.ipv4.ip_forward={{ v }}")
    assert s.place == "an argument of sysctl" and not s.dash_first
    read("sysctl -w net.ipv4.ip_forward=1")
    read("sysctl -n -q -e net.ipv4.ip_forward")
    refused("sysctl -p f", "sysctl is given the option '-p'")
    for template in ("sysctl -w {{ v }}", "sysctl -w net.x{{ v }}", "sysctl -w ={{ v }}", "sysctl -w 'net.x='{{ v }}"):
        refused(template, "stands where sysctl reads a setting's name")


def test_a_list_glued_to_a_sysctl_setting_may_not_pass_an_option_in_a_later_word() -> None:
    """sysctl reads options wherever they stand (GNU getopt): ``net.x=1 -p`` loads /etc/sysctl.conf."""
    s = slot("sysctl -w net.x={{ v }}")
    assert value_problem(s, "-1", True, RUNTIME) is None  # net.x=-1: one word, the setting's value
    assert "sysctl would read it as an option" in (value_problem(s, "-p", False, RUNTIME) or "")


# -- programs that do not print their arguments ---------------------------------------------------------------------


@pytest.mark.parametrize("template", ["[ -n {{ x }} ] > f", "test -n {{ x }} > f", "cat {{ x }} > f",
                                      "sleep {{ x }} > f", "kill {{ x }} > f"])  # fmt: skip
def test_a_program_that_does_not_print_its_arguments_may_have_its_output_written_into_a_file(template: str) -> None:
    assert slot(template).place.startswith("an argument of ")


def test_a_program_that_may_print_its_arguments_may_not_have_its_output_written_into_a_file() -> None:
    refused("ip link show {{ x }} > f", "which may print it")
    refused("grep {{ x }} f > out", "which may print it")


# -- awk ------------------------------------------------------------------------------------------------------------


def test_awk_takes_only_its_field_separator_and_variable_options_then_its_program() -> None:
    read("awk '{print $1}' f")
    read("awk -F: -v n=1 '{print $n}' f")
    read("awk -F - '{print $2}' f")  # -F's argument may start with '-'
    read("awk -v n=1 -F , '{print}' f")
    read("awk -- '{print}' f")
    read("awk '{print}' f -f")  # after the program: a file named -f


@pytest.mark.parametrize(
    "template",
    ["awk -f p.awk f", "awk -fp.awk", "awk --file=p.awk f", "awk -E p.awk", "awk -i lib.awk '{print}'",
     "awk -v n=1 -f p.awk f", "awk --version"],
)  # fmt: skip
def test_awk_reading_a_program_from_a_file_or_an_unknown_option_is_refused(template: str) -> None:
    refused(template, "never an awk reading its program from a file")


def test_a_value_is_no_argument_of_awk() -> None:
    refused("awk {{ x }} f", "is an argument of awk, which takes no value")
    refused("awk '{print}' {{ x }}", "is an argument of awk, which takes no value")


# -- perl -----------------------------------------------------------------------------------------------------------


def test_perl_runs_only_code_written_in_the_recipe() -> None:
    read("perl -e 'print 1'")
    read("perl -E 'say 1'")
    read("perl -w -l -MTime::HiRes=time -e 'print time'")
    read("perl -e 'print 1' -w")  # a known switch after the code
    for template in ("perl", "perl -w", "perl script.pl", "perl -e 'print 1' -i.bak f", "perl -x -e 1"):
        refused(template, "perl runs a script from a file or takes an option natbench does not know")
    refused("perl -e 'print 1' {{ x }}", "perl runs a script from a file")
