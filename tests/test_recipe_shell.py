"""Where a recipe's placeholders may stand (natbench.duts.recipes.shell) and what values may go there.

The parser's subset (constructs read, constructs refused with what they are), the program table's readings, the
places a value may stand and what each needs of it, values checked against their place when a campaign is
validated and when a command is rendered, the load-time error naming file, line and field, ``text`` parameters
and their formats, commands written as a list, and the linear-time pattern engine. The last section holds each
need of a place at its boundary (the value on each side, each condition false alone): the semantic mutants of
shell.py (bench/semantic_mutants.toml) are killed here.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from selectable_ids import spelled

from natbench.duts.recipes import load_recipe, parse_recipe
from natbench.duts.recipes.regex import check_pattern, pattern_matches
from natbench.duts.recipes.shell import ShellStructureError, Slot, analyze, value_problem
from natbench.duts.recipes.shellsyntax import ShellSyntaxError, mark_placeholders, parse
from natbench.duts.recipes.values import RUNTIME, FormatText, ValueClass
from natbench.errors import RecipeError

REFUSED = [
    # the parser's subset: constructs outside it, wherever they stand
    ("cat <<EOF\n{{ x }}\nEOF", "here-document"),
    ("cat <<{{ x }}", "here-document"),
    ("cat <<< {{ x }}", "here-string"),
    ("echo a # {{ x }}", "comment"),
    ("echo \\{{ x }}", "backslash"),
    ("e\\val {{ x }}", "backslash"),
    ("echo a \\\n{{ x }}", "backslash"),
    ("echo `echo {{ x }}`", "backquote"),
    ("echo $'{{ x }}'", "$'...' quotes"),
    ('echo $"{{ x }}"', '$"..." quotes'),
    ("echo ${{ x }}", "follows a '$'"),
    ("echo ${a:-{{ x }}}", "inside ${...}"),
    ("echo ${a:-b} {{ x }}", "${...} with an operator"),
    ("$0 -c {{ x }}", "'$0'"),
    ('set -- x; "$@" {{ x }}', "'$@'"),
    ("set -- {{ x }}; ip link set $1 up", "'$1'"),
    ("echo $(( {{ x }} + 1 ))", "inside arithmetic"),
    ("echo $[ {{ x }} ]", "'$['"),
    ("echo $((a=1)) {{ x }}", "'='"),
    ("echo $((a++)) {{ x }}", "'++'"),
    ("(( {{ x }} ))", "subshells"),
    ("( ip link set {{ x }} up )", "subshells"),
    ("f() { ip link set {{ x }} up; }", "'('"),
    ("[[ {{ x }} -eq 1 ]]", "'[[ ]]'"),
    ("case {{ x }} in a) ;; esac", "'case'"),
    ("time -p {{ x }}", "'time'"),
    ("for ((i=0; i<{{ x }}; i++)); do :; done", "variable name must follow"),
    ("ip link set {{ x }} up &", "background"),
    ("ip link set {{ x }} up &> f", "'&>'"),
    ("ip link set {{ x }} up |& tee f", "'|&'"),
    ("echo {{ x }} 3> f", "file descriptor 3"),
    ("echo {{ x }} 1<> f", "<>"),
    ("echo {{ x }} >| f", ">|"),
    ("echo {{ x }} >&{{ y }}", "follows '>&'"),
    ("cat <(echo {{ x }})", "process substitution"),
    ("ls /bin/da?h {{ x }}", "'?' (a glob)"),
    ("ls * {{ x }}", "'*' (a glob)"),
    ("ls ~ {{ x }}", "'~'"),
    ("echo x{a,b} {{ x }}", "stand only as words of their own"),
    ("a[{{ x }}]=1", "stand only as words of their own"),
    ("echo '{{ x }}'", "inside shell quotes"),
    ('echo "{{ x }}"', "inside shell quotes"),
    ('echo "a $(echo {{ x }})"', "into the output of $( )"),
    ("echo {{ x }} 'x", "single quote is not closed"),
    ("echo {{ x }} )", "unexpected ')'"),
    ("{ echo {{ x }}", "missing (unbalanced)"),
    ("if ip link; then echo {{ x }} > f", "'fi' is missing"),
    # command names: literal, a known program, by name
    ("{{ x }} --version", "is the command name"),
    ("cat $({{ x }})", "is the command name"),
    ("x=sh; $x -c {{ x }}", "not written in the recipe"),
    ("/sbin/ip link set {{ x }} up", "by a path"),
    ("eval echo {{ x }}", "runs 'eval'"),
    ("sh -c {{ x }}", "runs 'sh'"),
    ("sudo ip link set {{ x }} up", "runs 'sudo'"),
    ("flock /tmp/l -c {{ x }}", "runs 'flock'"),
    ("command ip link set {{ x }} up", "runs 'command'"),
    ("exec > f; echo {{ x }}", "runs 'exec'"),
    ("ip netns exec ns {{ x }}", "is the command name"),
    ("ip netns exec ns sh -c {{ x }}", "runs 'sh'"),
    ("echo {{ x }} | xargs ip link set", "runs 'xargs'"),
    # programs read as natbench knows them
    ("ip -all netns exec ip link set {{ x }} up", "option '-all'"),
    ("ip -b f link set {{ x }} up", "option '-b'"),
    ("ip netns e ns ip link set {{ x }} up", "ip netns e:"),
    ("ip net exec ns ip link set {{ x }} up", "ip net:"),
    ("ip vrf exec red ip link set {{ x }} up", "ip vrf:"),
    ("ip {{ x }} set dev eth0 up", "is ip's object"),
    ("ip link {{ x }} dev eth0 up", "is ip's command"),
    ("iptables -j {{ x }}", "stands where iptables reads no value"),
    ("iptables -m {{ x }}", "stands where iptables reads no value"),
    ("iptables --modprobe={{ x }} -L", "stands where iptables reads no value"),
    ("sysctl -w {{ x }}=1", "stands where sysctl reads a setting's name"),
    ("sysctl -p {{ x }}", "option '-p'"),
    ("modprobe -C {{ x }} jool", "option '-C'"),
    ("nft --foo add table {{ x }}", "option '--foo'"),
    ("printf {{ x }}", "printf's format"),
    ("printf -v {{ x }} %s a", "printf's format"),
    ("printf '%b\\n' {{ x }} > f", "printf's format"),
    ("printf '%*s' 5 {{ x }} > f", "printf's format"),
    ("awk '{print}' {{ x }}", "is an argument of awk, which takes no value"),
    ("awk -f {{ x }} /etc/hosts", "its program from a file"),
    ("perl script.pl {{ x }}", "runs a script from a file"),
    ("date {{ x }}", "is an argument of date"),
    # where the text a value is written into goes
    ("echo {{ x }} | nft -f -", "only tee as a reader"),
    ("echo {{ x }} | grep -q a", "only tee as a reader"),
    ("{ echo {{ x }}; } | grep -q a", "only tee as a reader"),
    ("echo {{ x }} | tee f | grep a", "only tee as its reader"),
    ("x=$(echo {{ x }} | tee f)", "into the output of $( )"),
    ("ip link show {{ x }} > f", "which may print it"),
    ("ip link show {{ x }} | tee f", "which may print it"),
    ("ip link set {{ x }} up 2> f", "error messages go to a file"),
    ("x=$(ip link show {{ x }})", "which may print it"),
    # assignments and variables
    ("PATH={{ x }} ip link", "assigned in front of a command"),
    ("a=1 ip link set {{ x }} up", "'a=... ip'"),
    ("IFS={{ x }}", "only lowercase variables"),
    ("IFS=: ; ip link set {{ x }} up", "only lowercase variables"),
    ("for PATH in {{ x }}; do :; done", "only lowercase variables"),
    ("v={{ x }}; $v", "not written in the recipe"),
    ("ip link show {{ x }}; echo a $_ > f", "cannot read $_"),
    ("_=1; echo a $_ > f; ip link set {{ x }} up", "only lowercase variables"),
    ("echo a $BASH_COMMAND > f; ip link set {{ x }} up", "cannot read $BASH_COMMAND"),
    ("echo $((n + 1)) {{ x }}", "cannot read $n"),
    ('v={{ x }}; printf "$v" > f', "printf's format must be the recipe's own text"),
    ('v={{ x }}; date "+$v"', "(through $v) is an argument of date"),
    ('v={{ x }}; w=$v; awk "$w" f', "(through $w) is an argument of awk"),
    ('v={{ x }}; echo "$v" | grep a', "only tee as a reader"),
]


@pytest.mark.parametrize(("template", "why"), REFUSED, ids=[spelled(t) for t, _ in REFUSED])
def test_a_placeholder_where_natbench_does_not_know_its_value_is_data_is_refused(template: str, why: str) -> None:
    with pytest.raises(ShellStructureError) as info:
        analyze(template)
    assert why in str(info.value)


READ = [
    "ip link set eth0 up",
    "iptables -V | grep -q nf_tables && { nft list table ip nat >/dev/null 2>&1 && echo present || echo absent; }"
    " || echo legacy",
    "[ -n \"$(iptables -t nat -S | grep -v '^-P')\" ] || nft delete table ip nat",
    "awk '$1 == \"Ip6OutForwDatagrams\" {print $2}' /proc/net/snmp6",
    "perl -MTime::HiRes=time -e 'printf \"%.6f\\n\", time'",
    "dpkg-query -W -f '${Version}' tayga 2>/dev/null || echo unknown",
    "if [ -e f ]; then echo a; elif [ -d f ]; then echo b; else echo c; fi",
    "while false; do sleep 1; done; until true; do sleep 1; done",
    "! grep -q x f\nip link",
    'h=1; echo ${h} $$ $? "${h}"',
    "echo ]]",
]


@pytest.mark.parametrize("text", READ, ids=range(len(READ)))
def test_the_subset_reads_what_recipes_write(text: str) -> None:
    assert analyze(text) == ()


def test_the_parser_keeps_quotes_placeholders_and_substitutions_apart() -> None:
    marked, names = mark_placeholders("echo a'b'\"c$d\"{{ x | csv }}$(cat f)")
    assert names == [("x", ("csv",))]
    (pipeline,) = parse(marked).pipelines
    (cmd,) = pipeline.commands
    parts = cmd.words[1].parts  # type: ignore[union-attr]
    assert [type(p).__name__ for p in parts] == [
        "Literal", "Literal", "Literal", "Expansion", "PlaceholderPart", "Substitution"
    ]  # fmt: skip
    with pytest.raises(ShellSyntaxError, match="reserves"):
        mark_placeholders("echo \ue000")


def test_nesting_and_command_count_are_bounded() -> None:
    with pytest.raises(ShellStructureError, match="nested too deep"):
        analyze("{ " * 30 + "true" + "; }" * 30)
    with pytest.raises(ShellStructureError, match="more than 256 commands"):
        analyze("; ".join(["true"] * 257))


def slot(template: str, **kw: Any) -> Slot:
    (found,) = analyze(template, **kw)
    return found


def test_an_argument_of_a_data_program_needs_no_leading_dash_before_double_dash() -> None:
    s = slot("ip link set {{ x }} up")
    assert (s.place, s.dash_first, s.token, s.head, s.written) == ("an argument of ip", True, False, False, False)
    assert not slot("grep -e a -- {{ x }}").dash_first  # after '--'
    assert not slot("iptables --comment={{ x }}").dash_first  # glued after literal text
    assert slot("iptables --comment={{ x }}").dash_rest  # a list's further words start words of their own


def test_iptables_takes_values_only_after_a_known_option() -> None:
    assert slot("iptables -t nat -A POSTROUTING -o {{ x }} -j MASQUERADE").place == "an argument of iptables"
    assert slot("iptables -A x --to-source {{ x }}:1024").place == "an argument of iptables"
    with pytest.raises(ShellStructureError, match="reads no value"):
        analyze("iptables -A x -j SNAT {{ x }}")  # not after an option taking a value


def test_ip_netns_exec_runs_the_rest_as_a_command_of_its_own() -> None:
    ns, dev = analyze("ip netns exec {{ ns }} ip link set {{ dev }} up")
    assert (ns.program, dev.program) == ("ip", "ip")
    (text,) = analyze("echo 00ff | ip netns exec ns tee {{ f }}")
    assert text.place == "an argument of tee"


def test_text_echo_writes_into_a_file_is_read_as_lines_of_a_format() -> None:
    head = slot("echo {{ x }} > f")
    assert (head.written, head.token, head.head, head.format) == (True, True, True, None)
    inner = slot("echo set limit states {{ x }} > f")
    assert (inner.head, inner.dash_first) == (False, True)
    after_brace = "echo set skip on '{' {{ x }} '}' >> f"
    assert slot(after_brace).head  # an unknown format: '{' may begin a statement
    assert not slot(after_brace, fmt="pf.conf").head  # in pf.conf only a new line does
    assert slot("echo pass '{' {{ x }} > f", fmt="nft").head  # in nft '{' opens statements
    assert slot("echo {{ x }} | tee f").written and not slot("echo {{ x }}").written  # natbench's own output
    assert not slot("echo {{ x }} > /dev/null").written
    assert not slot("echo a{{ x }} > f").dash_first  # glued: not at the start of a written word


def test_printf_conversions_at_a_line_start_make_every_argument_a_statement_start() -> None:
    assert slot("printf '%s\\n' {{ x }} > f").head
    assert not slot("printf 'key %s\\n' {{ x }} > f").head
    assert slot("printf 'key %s\\n%s\\n' a {{ x }} > f").head  # arguments recycle the conversions
    assert not slot("printf 'key=%s\\n' {{ x }} > f").dash_first


def test_nft_arguments_are_one_line_of_its_rule_language() -> None:
    s = slot("nft add rule ip t c oifname {{ x }} counter")
    assert (s.written, s.format, s.token, s.head) == (True, "nft", True, False)
    assert slot("nft {{ x }}").head
    assert slot("nft add chain ip t c '{ type filter hook input priority 0; ' {{ x }} '}'").head
    assert not slot("nft -f {{ x }}").written  # a file name


def test_a_value_written_inside_a_string_the_recipe_opened_is_marked() -> None:
    assert not slot("nft add rule ip t c comment {{ x }}").inside_string
    assert slot("nft add rule ip t c comment '\"a' {{ x }}").inside_string
    assert slot("printf '\"%s\"\\n' {{ x }} > f").inside_string
    assert not slot("echo '\"a\"' {{ x }} > f").inside_string  # the string is closed again
    text = ValueClass("text", format="nft")
    note = FormatText("a; flush ruleset", "nft")
    assert value_problem(slot("nft add rule ip t c comment {{ x }}"), note, True, text) is None
    opened = slot("nft add rule ip t c comment '\"a' {{ x }}")
    assert "inside a string" in (value_problem(opened, note, True, text) or "")


def test_a_variable_is_followed_to_each_use() -> None:
    assert slot("v={{ x }}; echo $((v + 1))").number
    unquoted = slot("v={{ x }}; ip link set $v up")
    assert unquoted.token and unquoted.dash_first
    quoted = slot('v={{ x }}; ip link set "$v" up')
    assert not quoted.token and quoted.single
    assert slot('v={{ x }}; w=$v; echo "$w" > f').head
    assert not slot("v={{ x }}; w=$(cat f); echo $((w + 1))").number  # w holds a file's content, not the value
    looped = slot("for i in {{ x }}; do ip link set $i up; done")
    assert looped.token and not looped.single


def test_a_redirection_file_and_an_assignment_are_one_word() -> None:
    assert slot("echo a > {{ f }}").single
    assert slot("cat < {{ f }}").single
    assert not slot("cat {{ f }}").single


VALUE = ValueClass("phrase")


@pytest.mark.parametrize(
    ("template", "word", "value_class", "problem"),
    [
        ("ip link set {{ x }} up", "-all", VALUE, "ip would read it as an option"),
        ("ip link set {{ x }} up", "all", VALUE, None),
        ("ip link set {{ x }} up", "CE 11b", VALUE, None),  # one argument: a blank is data
        ("grep -- {{ x }}", "-v", VALUE, None),  # after --
        ("ip link set {{ x }} up", "a;b", RUNTIME, "holds characters"),
        ("ip link set {{ x }} up", "a\nb", RUNTIME, "holds characters"),
        ("ip link set {{ x }} up", "", RUNTIME, "holds characters"),
        ("echo a {{ x }} > f", "em0 pass", VALUE, "one plain token"),
        ("echo a {{ x }} > f", "em0", VALUE, None),
        ("echo {{ x }} > f", "300", ValueClass("number"), None),
        ("echo {{ x }} > f", "ffffffff", ValueClass("datum"), None),  # a CPU mask of a typed parameter
        ("echo {{ x }} > f", "ffffffff", RUNTIME, "begins a statement"),  # a value learnt at run time
        ("echo {{ x }} > f", "1", RUNTIME, None),
        ("echo {{ x }} > f", "block", ValueClass("word"), "begins a statement"),
        ("echo a {{ x }} > f", "-j", VALUE, "would read it as an option"),
        ("v={{ x }}; echo $((v + 1))", "12", ValueClass("number"), None),
        ("v={{ x }}; echo $((v + 1))", "a1", RUNTIME, "must be a number"),
        ("v={{ x }}; ip link set $v up", "a b", VALUE, "one plain token"),
        ('v={{ x }}; ip link set "$v" up', "a b", VALUE, None),
    ],
)
def test_values_are_checked_against_their_place(
    template: str, word: str, value_class: ValueClass, problem: str | None
) -> None:
    found = value_problem(slot(template), word, True, value_class)
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_only_the_further_words_of_a_list_meet_the_dash_rule_when_the_first_is_glued() -> None:
    s = slot("iptables --comment=x{{ x }}")
    assert value_problem(s, "-a", True, VALUE) is None
    assert value_problem(s, "-a", False, VALUE) is not None


def test_text_of_a_format_stands_only_in_text_written_in_that_format() -> None:
    pf = FormatText("em0 set skip", "pf.conf")
    written = slot("echo pass on {{ x }} >> f", fmt="pf.conf")
    assert value_problem(written, pf, True, ValueClass("text", format="pf.conf")) is None
    assert "stands where no pf.conf text" in (value_problem(slot("echo pass on {{ x }} >> f"), pf, True, RUNTIME) or "")
    bad = FormatText('a" pass', "pf.conf")
    assert "cannot hold a double quote" in (value_problem(written, bad, True, RUNTIME) or "")


def recipe(commands: str, params: str = "  v: {type: str, default: a}\n", head: str = "") -> str:
    return (
        "recipe: t\nfamily: forwarding\nos: linux\nstateful: false\n"
        + head
        + "params:\n"
        + params
        + "steps:\n  setup:\n"
        + commands
    )


def test_a_refused_place_names_file_line_and_field() -> None:
    text = recipe("    - ip link\n    - eval echo {{ v }}\n")
    with pytest.raises(RecipeError) as info:
        parse_recipe(text, "r.yaml")
    assert str(info.value) == (
        "r.yaml:10: steps.setup[1].run: runs 'eval', a program whose arguments natbench does not know: a recipe runs "
        "only the programs listed under 'Programs' in docs/recipes.md"
    )
    assert "\n" not in str(info.value)


def test_every_command_is_read_even_without_a_placeholder() -> None:
    """A value written into a file reaches later commands: a command running a script is refused on its own."""
    with pytest.raises(RecipeError, match=r"r.yaml:10: steps.setup\[1\].run: runs 'sh'"):
        parse_recipe(recipe("    - echo x {{ v }} > /tmp/s\n    - sh /tmp/s\n"), "r.yaml")
    with pytest.raises(RecipeError, match=r"r.yaml:5: clock: runs 'python3'"):
        parse_recipe(recipe("    - ip link\n", head="clock: python3 -c 'print(1)'\n"), "r.yaml")


def test_the_type_decides_what_may_stand_where_a_statement_begins() -> None:
    words = "  v: {type: str, default: a}\n"
    with pytest.raises(RecipeError, match="is a word and begins a statement of text echo writes"):
        parse_recipe(recipe("    - echo {{ v }} > /tmp/f\n", words), "r.yaml")
    parse_recipe(recipe("    - echo {{ v }} > /tmp/f\n", "  v: {type: int, default: 1}\n"), "r.yaml")
    parse_recipe(recipe("    - echo {{ v }} > /tmp/f\n", "  v: {type: ipv6, default: '::1'}\n"), "r.yaml")
    parse_recipe(recipe("    - echo x {{ v }} > /tmp/f\n", words), "r.yaml")
    with pytest.raises(RecipeError, match="reaches arithmetic"):
        parse_recipe(recipe("    - n={{ v }}; echo $((n + 1))\n", words), "r.yaml")
    parse_recipe(recipe("    - n={{ v }}; echo $((n + 1))\n", "  v: {type: int, default: 1}\n"), "r.yaml")


def test_a_list_may_not_be_assigned_or_be_a_redirection_file() -> None:
    lists = "  l: {type: list, items: str, default: [a, b]}\n"
    with pytest.raises(RecipeError, match="is a list"):
        parse_recipe(recipe("    - x={{ l }}; ip link set $x up\n", lists), "r.yaml")
    with pytest.raises(RecipeError, match="is a list"):
        parse_recipe(recipe("    - echo a > {{ l }}\n", lists), "r.yaml")
    parse_recipe(recipe("    - x={{ l | csv }}; ip link set $x up\n", lists), "r.yaml")  # one word


def test_a_namespace_is_one_word_and_reads_with_its_command() -> None:
    with pytest.raises(RecipeError, match="a namespace is one word"):
        parse_recipe(recipe("    - {run: ip link, netns: 'a {{ v }}'}\n"), "r.yaml")
    with pytest.raises(RecipeError, match=r"steps.setup\[0\].run: runs 'sh'"):
        parse_recipe(recipe("    - run: sh -c x\n      netns: '{{ v }}'\n"), "r.yaml")
    r = parse_recipe(recipe("    - run: ip link set {{ v }} up\n      netns: n{{ v }}\n"), "r.yaml")
    assert r.render("setup", {"v": "eth0"}) == ["ip netns exec neth0 ip link set eth0 up"]


def test_a_command_written_as_a_list_is_one_simple_command_with_every_literal_quoted() -> None:
    r = parse_recipe(recipe("    - run: [ip, link, set, 'a b{{ v }}', up, '$(x)']\n"), "r.yaml")
    assert r.render("setup", {"v": "eth0"}) == ["ip link set 'a b'eth0 up '$(x)'"]
    with pytest.raises(RecipeError, match="runs 'sh'"):
        parse_recipe(recipe("    - run: [sh, -c, '{{ v }}']\n"), "r.yaml")
    with pytest.raises(RecipeError, match="holds strings"):
        parse_recipe(recipe("    - run: [ip, 3]\n"), "r.yaml")


def test_a_text_parameter_is_written_by_its_format_and_only_into_it() -> None:
    params = "  note: {type: text, format: nft, default: 'my rule; flush ruleset'}\n"
    r = parse_recipe(recipe("    - nft add rule ip t c counter comment {{ note }}\n", params), "r.yaml")
    assert r.render("setup", {}) == ["nft add rule ip t c counter comment '\"my rule; flush ruleset\"'"]
    with pytest.raises(RecipeError, match="cannot hold a double quote"):
        r.resolve({"note": 'a" ; flush ruleset; "'})
    with pytest.raises(RecipeError, match="a text parameter stands only in text a command writes in its format"):
        parse_recipe(recipe("    - ip link set {{ note }} up\n", params), "r.yaml")
    pf = "  note: {type: text, format: pf.conf, default: x y}\n"
    with pytest.raises(RecipeError, match=r"declare format: pf\.conf"):
        parse_recipe(recipe("    - echo pass on {{ note }} >> /tmp/pf.conf\n", pf), "r.yaml")
    written = "    - run: echo pass on {{ note }} >> /tmp/pf.conf\n      format: pf.conf\n"
    assert parse_recipe(recipe(written, pf), "r.yaml").render("setup", {}) == ["echo pass on '\"x y\"' >> /tmp/pf.conf"]
    with pytest.raises(RecipeError, match="names its format"):
        parse_recipe(recipe("    - ip link\n", "  note: {type: text}\n"), "r.yaml")
    with pytest.raises(RecipeError, match="writes none"):
        parse_recipe(recipe("    - run: ip link set {{ v }} up\n      format: nft\n"), "r.yaml")


def test_str_without_a_pattern_is_one_token_and_with_one_a_phrase() -> None:
    r = parse_recipe(
        recipe("    - jool -i {{ a }} -i {{ b }}\n", "  a: {type: str}\n  b: {type: str, pattern: '.+'}\n"),
        "r.yaml",
    )
    assert r.resolve({"a": "x.1", "b": "CE 11"}) == {"a": "x.1", "b": "CE 11"}
    with pytest.raises(RecipeError, match="not one plain token"):
        r.resolve({"a": "x 1"})
    with pytest.raises(RecipeError, match="holds characters"):
        r.resolve({"b": "CE;11"})  # matches the pattern, but shell syntax is refused by the type
    with pytest.raises(RecipeError, match="holds characters"):
        r.resolve({"b": "CE  11"})  # two blanks: tokens are separated by single blanks
    with pytest.raises(RecipeError, match="holds characters a value may not"):
        parse_recipe(recipe("    - ip link\n", "  c: {type: choice, choices: [a, 'b;c']}\n"), "r.yaml")


def test_campaign_values_are_checked_against_every_place_before_anything_runs() -> None:
    ipt = load_recipe("iptables-nat44")
    with pytest.raises(RecipeError) as info:
        ipt.resolve({"private_if": "eth0", "public_if": "eth1", "rule_comment": "--help"}, file="c.yaml")
    assert info.value.field == "rule_comment"
    assert "'--help' starts with '-': iptables would read it as an option" in info.value.message
    with pytest.raises(RecipeError, match="not starting with '-'"):
        ipt.resolve({"private_if": "-all", "public_if": "eth1"})
    pf = load_recipe("openbsd-pf-nat64")
    base: dict[str, Any] = {"private_if": "em0", "public_if": "em1", "pool4": "198.19.0.1"}
    with pytest.raises(RecipeError, match="not a valid interface name") as info:
        pf.resolve({**base, "skip_ifs": ["lo", "em2#x"]})
    assert info.value.field == "skip_ifs"
    with pytest.raises(RecipeError, match="scope"):
        pf.resolve({**base, "pool6": "64:ff9b::%x/96"})
    assert "nat-to" not in " ".join(pf.render("setup", base))  # the nat64 ruleset renders as before


def test_a_value_natbench_supplies_is_checked_when_it_is_rendered() -> None:
    ipt = load_recipe("iptables-nat44")
    params = {"private_if": "eth0", "public_if": "eth1"}
    with pytest.raises(RecipeError) as info:
        ipt.render("teardown", params, {"orig_ip_forward": "1; reboot"})
    assert "orig_ip_forward: '1; reboot' holds characters natbench never puts into a command" in str(info.value)
    with pytest.raises(RecipeError, match="begins a statement"):
        ipt.render("teardown", params, {"orig_ip_forward": "reboot"})  # a word heading the line echo writes
    assert "echo 1 > /proc/sys/net/ipv4/ip_forward" in ipt.render("teardown", params, {"orig_ip_forward": "1"})


def test_pfctl_reads_options_getopt_style_every_letter_known() -> None:
    assert slot("pfctl -nf {{ x }}").place == "an argument of pfctl"  # -f's argument, clustered after -n
    assert slot("pfctl -a {{ x }} -sr").place == "an argument of pfctl"
    assert analyze("pfctl -ss -vv") == () and analyze("pfctl -Fa") == ()  # -s, -F with their argument glued
    with pytest.raises(ShellStructureError, match="is the argument of pfctl -D"):
        analyze("pfctl -D ext={{ x }} -f f")  # a macro is pf.conf text: the recipe's own
    with pytest.raises(ShellStructureError, match="option -W, which natbench does not know"):
        analyze("pfctl -W {{ x }}")
    with pytest.raises(ShellStructureError, match="stands in an option of pfctl"):
        analyze("pfctl -f{{ x }}")


def test_a_saved_output_may_not_take_a_parameters_name() -> None:
    with pytest.raises(RecipeError, match=r"steps.setup\[0\].save: save: v is the name of a parameter"):
        parse_recipe(recipe("    - run: cat f\n      save: v\n"), "r.yaml")
    with pytest.raises(RecipeError, match="save: dut is the name"):
        parse_recipe(recipe("    - run: cat f\n      save: dut\n"), "r.yaml")


def test_the_documentation_lists_every_program_natbench_knows() -> None:
    from pathlib import Path

    from natbench.duts.recipes.programs import PROGRAMS

    page = (Path(__file__).resolve().parents[1] / "docs" / "recipes.md").read_text()
    section = page.split("### Programs", 1)[1].split("\n### ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    listed = set()
    for row in rows:
        listed |= set(re.findall(r"`([^` ]+)`", row.split("|")[1]))
    assert listed == set(PROGRAMS)


def test_the_shipped_recipes_load_and_every_command_is_analyzed() -> None:
    from natbench.duts.recipes import list_recipes
    from natbench.duts.recipes.shell import command_slots

    shipped = [n for n, p in list_recipes().items() if p.parent.name == "dut_recipes"]
    assert len(shipped) == 11
    slots = sum(
        len(command_slots(c.run, c.netns, c.format)[0])
        for n in shipped
        for s in load_recipe(n).steps.values()
        for c in s.commands
    )
    assert slots > 300


def test_patterns_match_in_linear_time() -> None:
    """(?:a?){28}a{28} takes 7 s at 28 characters in Python's re; RE2 answers at once, also at 256."""
    started = time.process_time()
    assert pattern_matches("(?:a?){28}a{28}", "a" * 28)
    assert not pattern_matches("(?:a?){28}a{28}", "a" * 60)
    assert not pattern_matches("(a+)+$", "a" * 255 + "!")
    assert not pattern_matches("(a|ab)*c", "ab" * 128)
    assert time.process_time() - started < 0.5
    with pytest.raises(ValueError, match="invalid escape sequence"):
        check_pattern(r"(a)\1")
    with pytest.raises(ValueError, match="at most 512 characters"):
        check_pattern("a" * 513)
    with pytest.raises(ValueError, match="bad regular expression"):
        check_pattern("(?=a)a")


def test_each_format_says_where_its_statements_begin_and_writes_its_strings() -> None:
    import pickle

    from natbench.duts.recipes.formats import FORMATS, UNKNOWN

    assert FORMATS["pf.conf"].starts_statement("") and not FORMATS["pf.conf"].starts_statement("set skip on {")
    assert FORMATS["nft"].starts_statement("add chain ip t c {") and not FORMATS["nft"].starts_statement("oifname")
    assert not FORMATS["json"].starts_statement('{"a":')
    assert UNKNOWN.starts_statement("a {") and not UNKNOWN.starts_statement("key=")
    assert FORMATS["json"].write('a"b\n') == '"a\\"b\\n"'
    assert FORMATS["nft"].write("my rule; flush") == '"my rule; flush"'
    for fmt, bad in (("nft", "a$b"), ("nft", "a\nb"), ("pf.conf", 'a"b'), ("pf.conf", "a\\b")):
        with pytest.raises(ValueError, match="cannot hold"):
            FORMATS[fmt].write(bad)
    text = FormatText("a b", "json")
    again = pickle.loads(pickle.dumps(text))
    assert (again, again.file_format) == ("a b", "json")


# --- the places' rules at their boundaries: each need on both sides, each condition of a rule false alone ----------


def test_only_the_first_word_of_a_list_begins_the_statement_it_heads() -> None:
    head = slot("echo {{ x }} > f")  # echo 1 block > f: 'block' follows the statement's first word
    word = ValueClass("word")
    assert "begins a statement" in (value_problem(head, "block", True, word) or "")
    assert value_problem(head, "block", False, word) is None
    assert value_problem(head, "1", True, ValueClass("number")) is None


def test_a_backslash_escapes_only_inside_a_string_of_written_text() -> None:
    assert slot("nft add rule ip t c comment 'a\\\"b' {{ x }}").inside_string  # a\"b: the quote opens a string
    assert not slot("nft add rule ip t c comment 'a\\b' {{ x }}").inside_string  # nft's text: no escape there
    assert not slot('nft add rule ip t c comment \'"a\\"b"\' {{ x }}').inside_string  # "a\"b": closed again


def test_a_new_line_or_a_blank_of_written_text_begins_a_word() -> None:
    after_line = slot("printf 'a\\n%s\\n' {{ x }} > f")
    assert after_line.head and after_line.dash_first
    assert not after_line.inside_string  # printf's \n is read, not unseen text
    assert slot("echo 'a\t'{{ x }} > f").dash_first  # after a tab of the text echo writes
    assert slot("echo 'a '{{ x }} > f").dash_first
    assert not slot("echo 'a'{{ x }} > f").dash_first


def test_a_value_after_text_natbench_cannot_see_may_be_inside_a_string() -> None:
    unseen = slot("echo $(cat f) {{ x }} > f")
    assert unseen.inside_string and unseen.head  # the output may end a line or open a string
    assert not slot("echo a {{ x }} > f").inside_string


def test_splitting_needs_one_token_only_where_the_shell_splits_a_variable() -> None:
    assert not slot('v={{ x }}; w=$v; ip link set "$w" up').token  # an assignment does not split
    assert slot('v={{ x }}; for i in $v; do ip link set "$i" up; done').token  # for's list does
    assert not slot('v={{ x }}; for i in "$v"; do ip link set "$i" up; done').token  # unless quoted
    assert slot('v={{ x }}; echo a "$v" > f').token  # written into a file: one token however quoted
    assert not slot("v={{ x }}; echo $v").token  # printed to natbench: split words are harmless


def test_a_variable_used_twice_meets_the_needs_of_both_uses() -> None:
    for uses in ('ip link set $v up; ip link set "$v" up', 'ip link set "$v" up; ip link set $v up'):
        assert slot(f"v={{{{ x }}}}; {uses}").token


def test_pid_and_status_carry_no_value() -> None:
    assert analyze("v=$$; ip link set $v up") == ()
    assert analyze("date +x$$") == ()  # the recipe's own text: $$ is the shell's, not a value
    assert analyze("printf '%b' $$ > f") == ()  # printf's format is checked only when values reach it
    with pytest.raises(ShellStructureError, match="printf's format"):
        analyze("printf '%b' {{ x }} > f")


def test_the_recipes_own_text_may_not_come_from_a_substitution() -> None:
    with pytest.raises(ShellStructureError, match=r"cannot read \$\( \) as an argument of date"):
        analyze("date $(cat f)")
    assert analyze("date +%s") == ()


def test_a_program_refusing_a_value_names_the_placeholder() -> None:
    with pytest.raises(ShellStructureError) as info:
        analyze("ip link set a up; iptables -j {{ x }}")
    assert info.value.placeholder == 0
    assert str(info.value).startswith("placeholder {{ x }} stands where iptables reads no value")


def test_an_assignment_in_front_of_a_command_named_by_no_literal_is_shown() -> None:
    with pytest.raises(ShellStructureError) as info:
        analyze("a=1 $(echo ip) link")
    assert "'a=... ...'" in str(info.value)
    with pytest.raises(ShellStructureError, match=r"'a=\.\.\. ip'"):
        analyze("a=1 ip link")


def test_a_program_named_by_any_path_is_refused_as_a_path() -> None:
    for path in ("/sbin/ip", "sbin/ip", "./ip"):
        with pytest.raises(ShellStructureError, match="naming its program by a path"):
            analyze(f"{path} link set {{{{ x }}}} up")
    with pytest.raises(ShellStructureError, match="runs 'sbin'"):
        analyze("sbin link set {{ x }} up")


def test_echo_options_are_skipped_only_before_its_text_quoted_or_not() -> None:
    assert slot("echo -n {{ x }} > f").head
    assert slot("echo '-n' {{ x }} > f").head  # the shell removes the quotes: echo reads -n as an option
    assert slot('echo "-e" {{ x }} > f').head
    assert not slot("echo '{' -n {{ x }} > f").head  # after the text begins, -n is text echo writes
    assert not slot("echo -x {{ x }} > f").head  # not an option of echo: written


def test_only_a_simple_tee_reads_value_text_from_a_pipe() -> None:
    for template in ("echo {{ x }} | { tee f; }", "echo {{ x }} | tee f | { tee g; }"):
        with pytest.raises(ShellStructureError, match="only tee"):
            analyze(template)
    chained = slot("echo {{ x }} | tee f | tee g > /dev/null")
    assert chained.written and chained.head


def test_a_printf_argument_glued_to_text_neither_begins_a_statement_nor_a_word() -> None:
    glued = slot("printf '%s\\n' a{{ x }} > f")
    assert (glued.head, glued.dash_first, glued.inside_string) == (False, False, True)  # 'a' may open a string
    alone = slot("printf '%s\\n' {{ x }} > f")
    assert (alone.head, alone.dash_first, alone.inside_string) == (True, True, False)


def test_printfs_escapes_are_read_as_the_text_they_write() -> None:
    tab = slot("printf 'a\\t%s\\n' {{ x }} > f")  # \t: a blank, after a word
    assert (tab.head, tab.dash_first, tab.inside_string) == (False, True, False)
    quote = slot("printf '\\\"a\\\" %s\\n' {{ x }} > f")  # \"a\": a string opened and closed
    assert not quote.inside_string
    assert slot("printf '\\\"%s\\n' {{ x }} > f").inside_string
    backslash = slot("printf 'a\\\\\\\\ %s\\n' {{ x }} > f")  # \\: one backslash, seen
    assert not backslash.inside_string
    unknown = slot("printf 'a\\v%s\\n' {{ x }} > f")  # an escape natbench does not read: unseen text
    assert unknown.inside_string and unknown.head


def test_every_printf_conversion_counts_not_only_the_last() -> None:
    first_heads = slot("printf '%s\\nkey %s\\n' {{ x }} > f")
    assert first_heads.head  # the first conversion begins a line
    after_blank = slot("printf 'a %s\\n' {{ x }} > f")
    assert (after_blank.head, after_blank.dash_first, after_blank.inside_string) == (False, True, False)
    assert slot("printf '%s=%s\\n' {{ x }} > f").dash_first  # the first conversion starts a word
    assert slot("printf '\"%s\" %s\\n' {{ x }} > f").inside_string  # the first one is inside a string
    assert not slot("printf 'k=%s\\n' {{ x }} > f").dash_first


def test_echo_reads_backslashes_so_text_after_one_is_unseen() -> None:
    assert slot("echo 'a\\b' {{ x }} > f").inside_string  # dash's echo reads escapes
    assert not slot("echo 'ab' {{ x }} > f").inside_string


def test_a_value_is_glued_only_after_text_known_to_be_non_empty() -> None:
    assert slot("ip link set ''{{ x }} up").dash_first  # empty quotes: the value starts the word
    assert not slot("ip link set $((1)){{ x }} up").dash_first  # arithmetic writes at least one digit
    assert not slot("ip link set x{{ x }} up").dash_first
    assert not slot("ip link set x{{ x }} up").word_start and slot("ip link set {{ x }} up").word_start


def test_a_syntax_error_at_the_first_placeholder_names_it() -> None:
    with pytest.raises(ShellStructureError) as info:
        analyze("echo '{{ x }}'")
    assert info.value.placeholder == 0 and str(info.value).startswith("placeholder {{ x }} ")
    with pytest.raises(ShellStructureError) as info:
        analyze("echo {{ x }} '{{ y }}'")
    assert info.value.placeholder == 1 and str(info.value).startswith("placeholder {{ y }} ")


def test_a_value_written_in_two_formats_has_no_one_format() -> None:
    both = "v={{ x }}; nft add rule ip t c comment $v; echo a $v > f"
    assert slot(both).written and slot(both).format is None
    assert slot(both, fmt="pf.conf").format is None  # nft and pf.conf
    assert slot("v={{ x }}; nft add rule ip t c comment $v; echo a $v > f", fmt="nft").format == "nft"
    note = ValueClass("text", format="nft")
    text = FormatText("a", "nft")
    assert "stands where no nft text" in (value_problem(slot(both), text, True, note) or "")
    assert "stands where no nft text" in (value_problem(slot("echo a {{ x }} > f"), text, True, note) or "")
    assert value_problem(slot("echo a {{ x }} > f", fmt="nft"), text, True, note) is None
    pf = slot("echo a {{ x }} > f", fmt="pf.conf")
    assert "stands where no nft text" in (value_problem(pf, text, True, note) or "")


def test_text_of_a_format_heads_a_statement_only_as_the_first_word() -> None:
    head = slot("nft {{ x }}")
    text, note = FormatText("a", "nft"), ValueClass("text", format="nft")
    assert "begins a statement" in (value_problem(head, text, True, note) or "")
    assert value_problem(head, text, False, note) is None
    assert value_problem(slot("nft add rule ip t c comment {{ x }}"), text, True, note) is None


def test_a_netns_template_is_read_with_its_command() -> None:
    from natbench.duts.recipes.shell import command_slots

    run, ns = command_slots("ip link set {{ dev }} up", "{{ ns }}")
    assert [s.name for s in run] == ["dev"] and [s.name for s in ns] == ["ns"]
    assert ns[0].place == "an argument of ip" and ns[0].dash_first
    assert command_slots("ip link set {{ dev }} up") == (analyze("ip link set {{ dev }} up"), ())


def test_error_messages_follow_descriptor_copies() -> None:
    with pytest.raises(ShellStructureError, match="error messages go to a file or pipe"):
        analyze("ip link set {{ x }} up 2>&1 | tee f")
    assert slot("ip link set {{ x }} up > /dev/null 2>&1").place == "an argument of ip"
    assert slot("ip link set {{ x }} up 2>/dev/null").place == "an argument of ip"  # errors to /dev/null: seen by none
    assert slot("ip link show {{ x }} > f 1>&2").place == "an argument of ip"  # its output goes to natbench again
    with pytest.raises(ShellStructureError, match="which may print it"):
        analyze("ip link show {{ x }} 1>&2 > f")


def test_tee_run_in_a_namespace_reads_value_text_from_a_pipe() -> None:
    inside = slot("echo {{ x }} | ip netns exec ns tee f > /dev/null")
    assert inside.written and inside.head
    with pytest.raises(ShellStructureError, match="only tee"):
        analyze("echo {{ x }} | ip netns exec ns grep a")


def test_printf_writes_each_value_as_one_token_of_its_text() -> None:
    s = slot("printf 'key %s\\n' {{ x }} > f", fmt="pf.conf")
    assert (s.place, s.program, s.written, s.token, s.format) == ("text printf writes", "printf", True, True, "pf.conf")
    assert s.dash_rest and s.word_start  # after a blank: each word of a list starts a written word
    assert "one plain token" in (value_problem(s, "em0 pass", True, VALUE) or "")
    assert "printf would read it as an option" in (value_problem(s, "-b", False, VALUE) or "")
    after_key = slot("printf 'k=%s\\n' {{ x }} > f")
    assert not after_key.dash_rest and value_problem(after_key, "-b", False, VALUE) is None
    assert not slot("printf 'key %s\\n' a{{ x }} > f").word_start


def test_echo_writes_a_lists_later_words_as_words_of_their_own() -> None:
    s = slot("echo a {{ x }} > f")
    assert s.dash_rest and s.word_start
    assert "echo would read it as an option" in (value_problem(s, "-b", False, VALUE) or "")
    glued = slot("echo a{{ x }} > f")
    assert glued.dash_rest and not glued.word_start and not glued.dash_first


def test_text_printed_to_natbench_has_no_dash_or_token_rule() -> None:
    s = slot("echo {{ x }}")
    assert (s.dash_first, s.dash_rest, s.token, s.written, s.word_start) == (False, False, False, False, True)
    assert value_problem(s, "-b", False, VALUE) is None
    assert slot("echo a > {{ f }}").word_start


def test_the_words_of_nfts_rule_are_separated_by_blanks() -> None:
    assert slot("nft add rule ip t c oifname {{ x }} counter").dash_first
    assert not slot("nft add rule ip t c oifname x{{ x }} counter").dash_first


def test_arithmetic_needs_numbers_wherever_it_stands_and_writes_digits() -> None:
    assert slot("v={{ x }}; echo $((v + 1)) > f").number  # written into a file
    assert slot("v={{ x }}; date +%s$((v + 1))").number  # the recipe's own text
    assert slot("v={{ x }}; y=$(echo $((v + 1)))").number  # into the output of $( )
    glued = slot("echo $((1)){{ x }} > f")  # after a digit of the written text
    assert not glued.head and not glued.dash_first


@pytest.mark.parametrize(
    "template",
    ["echo a $(eval b) > f", "echo $(eval b)", "x=$(echo $(eval b))", "nft add rule ip t c comment $(eval b)"],
)
def test_a_substitution_in_text_is_read_as_a_command_of_its_own(template: str) -> None:
    with pytest.raises(ShellStructureError, match="runs 'eval'"):
        analyze(template)


def test_variables_assigned_from_each_other_are_followed_once() -> None:
    assert slot("a={{ x }}; b=$a; a=$b; ip link set $a up").token


def test_a_redirection_through_an_unquoted_variable_needs_one_token() -> None:
    assert slot("v={{ x }}; echo a > $v").token
    assert not slot('v={{ x }}; echo a > "$v"').token


def test_a_variable_copied_from_the_environment_is_refused() -> None:
    with pytest.raises(ShellStructureError, match=r"cannot read \$HOME"):
        analyze('w=$HOME; ip link set "$w" up')


def test_a_written_value_is_text_of_the_line_for_what_follows_it() -> None:
    first, second = analyze("echo {{ x }}{{ y }} > f")
    assert first.head and first.dash_first
    assert not second.head and not second.dash_first  # it follows the first value's text


def test_text_after_a_variable_or_a_percent_sign_is_followed() -> None:
    assert slot("v='\"a'; echo $v {{ x }} > f").inside_string  # a variable's text is unseen: it may open a string
    assert not slot("v=a; echo a {{ x }} > f").inside_string
    percent = slot("printf '%%%s\\n' {{ x }} > f")  # %% writes a '%': the value follows it in one word
    assert not percent.head and not percent.dash_first
