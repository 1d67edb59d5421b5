// The Jinja interpreter against Python Jinja2 as transformers configures it
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols). The expected
// texts in kRenderCases were produced by Jinja2 3.1 with that configuration.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "common/jinja/template.h"

namespace sy::jinja {
namespace {

std::string render(const std::string& source, const nlohmann::ordered_json& vars = {},
                   const Options& options = {}) {
  Template t(source, options);
  return t.render(vars.is_null() ? nlohmann::ordered_json::object() : vars);
}

struct RenderCase {
  const char* name;
  const char* source;
  const char* vars;  // JSON object
  const char* expected;
};

const RenderCase kRenderCases[] = {
    // Whitespace: trim_blocks, lstrip_blocks, -/+ markers, comments, raw
    {"trim_and_lstrip", "a\n  {% if true %}\n  x\n  {% endif %}\nb", "{}", "a\n  x\nb"},
    {"minus_strips_all", "a\n  {%- if true -%}\n  x\n  {%- endif -%}\nb", "{}", "axb"},
    {"plus_keeps", "a\n  {%+ if true %}\n  x\n  {% endif +%}\nb", "{}", "a\n    x\n\nb"},
    {"variables_not_lstripped", "  {{ 'x' }}  \n  y", "{}", "  x  \n  y"},
    {"comment_line_removed", "a\n  {# note #}\nb", "{}", "a\nb"},
    {"comment_minus", "x {#- c -#} y", "{}", "xy"},
    {"variable_minus", "a  {{- ' b ' -}}  c", "{}", "a b c"},
    {"raw_block", "{% raw %}{{ not evaluated }}{% if %}{% endraw %}", "{}",
     "{{ not evaluated }}{% if %}"},
    {"raw_block_lines", "  {% raw %}\n  {{ a }}\n  {% endraw %}\nz", "{}", "\n  {{ a }}\nz"},
    {"one_trailing_newline_dropped", "x\n\n", "{}", "x\n"},
    {"crlf_normalized", "a\r\nb\r\n{% if true %}\r\nc{% endif %}", "{}", "a\nb\nc"},
    {"for_lines", "{% for i in [1,2] %}\n  {{ i }}\n{% endfor %}\n", "{}", "  1\n  2\n"},
    // Statements: if, for, set, namespace, macro, call, filter, with, generation
    {"if_elif_else", "{% if 0 %}a{% elif '' %}b{% elif [1] %}c{% else %}d{% endif %}", "{}", "c"},
    {"if_else", "{% if none %}a{% else %}b{% endif %}", "{}", "b"},
    {"for_else_empty", "{% for x in [] %}a{% else %}empty{% endfor %}", "{}", "empty"},
    {"for_filtered_loop_vars",
     "{% for x in [1,2,3,4] if x is even %}{{ x }}:{{ loop.index }}/{{ loop.length }}{% if not "
     "loop.last %},{% endif %}{% endfor %}",
     "{}", "2:1/2,4:2/2"},
    {"loop_attributes",
     "{% for x in 'abc' %}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first "
     "}}{{ loop.last }}|{% endfor %}",
     "{}", "032TrueFalse|121FalseFalse|210FalseTrue|"},
    {"loop_prev_next",
     "{% for x in [1,2,3] %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }};{% endfor %}", "{}",
     "<1>2;1<2>3;2<3>;"},
    {"loop_cycle_changed",
     "{% for x in [1,1,2] %}{{ loop.cycle('a','b') }}{{ loop.changed(x) }} {% endfor %}", "{}",
     "aTrue bFalse aTrue "},
    {"nested_loops",
     "{% for x in [1,2] %}{% for y in 'ab' %}{{ loop.index }}{{ x }}{{ y }} {% endfor %}{% endfor "
     "%}",
     "{}", "11a 21b 12a 22b "},
    {"unpack_items", "{% for k, v in {'b': 1, 'a': 2}.items() %}{{ k }}={{ v }};{% endfor %}", "{}",
     "b=1;a=2;"},
    {"unpack_pairs", "{% for a, b in [[1, 2], (3, 4)] %}{{ a + b }}{% endfor %}", "{}", "37"},
    {"dict_iterates_keys", "{% for k in {'b': 1, 'a': 2} %}{{ k }}{% endfor %}", "{}", "ba"},
    {"break_continue",
     "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% "
     "endif %}{{ x }}{% endfor %}",
     "{}", "0134"},
    {"loop_scope_does_not_leak",
     "{% set x = 1 %}{% for i in range(3) %}{% set x = x + i %}{{ x }}{% endfor %}[{{ x }}]", "{}",
     "123[1]"},
    {"if_scope_leaks", "{% if true %}{% set y = 3 %}{% endif %}{{ y }}", "{}", "3"},
    {"namespace_carries_state",
     "{% set ns = namespace(n=0, seen=[]) %}{% for x in [1,2,3] %}{% set ns.n = ns.n + x %}{% set "
     "ns.seen = ns.seen + [x] %}{% endfor %}{{ ns.n }} {{ ns.seen }}",
     "{}", "6 [1, 2, 3]"},
    {"set_tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}", "{}", "12"},
    {"set_block", "{% set x %}inner {{ 1 + 1 }}{% endset %}[{{ x }}]", "{}", "[inner 2]"},
    {"set_block_filtered", "{% set x | upper | trim %} inner {% endset %}[{{ x }}]", "{}",
     "[INNER]"},
    {"set_shadows_context", "{% set messages = messages[1:] %}{{ messages|length }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"sys\"}, {\"role\": \"user\", "
     "\"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"yo\"}]}",
     "2"},
    {"macro_defaults_and_kwargs",
     "{% macro m(a, b=2) %}{{ a }}-{{ b }}{% endmacro %}{{ m(1) }}|{{ m(1, 3) }}|{{ m(b=5, a=4) }}",
     "{}", "1-2|1-3|4-5"},
    {"macro_missing_arg_is_undefined", "{% macro m(a) %}[{{ a }}]{% endmacro %}{{ m() }}", "{}",
     "[]"},
    {"macro_varargs_kwargs",
     "{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, x=3) }}", "{}",
     "(1, 2){'x': 3}"},
    {"macro_sees_later_globals",
     "{% set x = 5 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 6 %}{{ m() }}", "{}", "6"},
    {"macro_recursion",
     "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(4) }}", "{}",
     "4321"},
    {"call_block",
     "{% macro wrap(t) %}<{{ t }}>{{ caller() }}</{{ t }}>{% endmacro %}{% call wrap('b') %}body{% "
     "endcall %}",
     "{}", "<b>body</b>"},
    {"call_block_args",
     "{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}{% call(x) "
     "each([1, 2]) %}[{{ x }}]{% endcall %}",
     "{}", "[1][2]"},
    {"filter_block", "{% filter upper %}hello {{ 'x' }}{% endfilter %}", "{}", "HELLO X"},
    {"filter_block_chain", "{% filter trim|title %}  hello world  {% endfilter %}", "{}",
     "Hello World"},
    {"with_block", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]", "{}", "3[]"},
    {"generation_block", "{% generation %}kept{% endgeneration %}", "{}", "kept"},
    // Expressions: literals, arithmetic, comparisons, logic, conditionals
    {"literals",
     "{{ 'a\\tb' }}|{{ \"q'\" }}|{{ 'ab' 'cd' }}|{{ 1_000 }} {{ 0x1f }} {{ 1.5e3 }} {{ true }} {{ "
     "False }} {{ none }} {{ None }}",
     "{}", "a\tb|q'|abcd|1000 31 1500.0 True False None None"},
    {"string_escapes", "{{ '\\u00e9\\x41\\101\\\\' }}", "{}", "éAA\\"},
    {"containers_print_as_python", "{{ [1, 'a', none, true, 1.5, [2], {'k': 'v'}, (1,), ()] }}",
     "{}", "[1, 'a', None, True, 1.5, [2], {'k': 'v'}, (1,), ()]"},
    {"string_repr_quotes", "{{ [\"it's\", 'say \"hi\"', 'tab\\t', 'nl\\n'] }}", "{}",
     "[\"it's\", 'say \"hi\"', 'tab\\t', 'nl\\n']"},
    {"int_float_arithmetic",
     "{{ 1 + 2 * 3 - 4 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7.5 // 2 }} "
     "{{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2 ** 3 ** 2 }}",
     "{}", "5.0 3 -4 1 2 3.0 1024 0.5 64"},
    {"float_formatting",
     "{{ 1.0 }} {{ 10 / 4 }} {{ 4 / 2 }} {{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e15 }} {{ 1e-5 }} {{ "
     "0.0001 }} {{ -0.0 }}",
     "{}", "1.0 2.5 2.0 0.30000000000000004 1e+16 1000000000000000.0 1e-05 0.0001 -0.0"},
    {"unary", "{{ -2|abs }} {{ -(3) }} {{ - 2 ** 2 }} {{ not 0 }} {{ not 'x' }} {{ +1 }}", "{}",
     "2 -3 4 True False 1"},
    {"concat_tilde", "{{ 'a' ~ 1 ~ none ~ true ~ 1.5 ~ undefined_name }}", "{}", "a1NoneTrue1.5"},
    {"sequence_ops",
     "{{ 'ab' * 2 }} {{ 2 * 'x' }} {{ [1] * 3 }} {{ 'a' + 'b' }} {{ [1] + [2] }} {{ (1,) + (2,) }}",
     "{}", "abab xx [1, 1, 1] ab [1, 2] (1, 2)"},
    {"percent_format",
     "{{ '%s=%d' % ('x', 3) }} {{ '%05.1f|%-4s|%x' % (3.14159, 'ab', 255) }} {{ '%(a)s' % {'a': 1} "
     "}}",
     "{}", "x=3 003.1|ab  |ff 1"},
    {"comparisons",
     "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ true "
     "== 1 }} {{ (1, 2) == [1, 2] }} {{ 'a' != 'a' }} {{ 2 >= 2 }} {{ 1 <= 0 }}",
     "{}", "True False True True True True False False True False"},
    {"unknown_filter_in_untaken_branch",
     "{% if true %}ok{% elif x is nope %}{{ x|nope }}{% endif %}", "{}", "ok"},
    {"tuple_subscript", "[{{ 'ab'[] }}][{{ {'a': 1}['a', 'b'] }}]", "{}", "[][]"},
    {"undefined_operands",
     "[{{ '%s' % undefined_name }}] {{ undefined_name in {'a': 1} }} {{ {'a': "
     "1}.get(undefined_name) }} {{ undefined_name == undefined_name }} {{ none == undefined_name "
     "}}",
     "{}", "[] False None True False"},
    {"membership",
     "{{ 'a' in 'cat' }} {{ 1 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }} {{ 'x' in "
     "undefined_name }}",
     "{}", "True True True True False"},
    {"and_or_return_operands",
     "{{ true and 'x' }} {{ false or 'y' }} {{ 0 or '' }}|{{ 'a' and 0 }} {{ none or [] }}", "{}",
     "x y |0 []"},
    {"conditional_expression",
     "{{ 'y' if 1 else 'n' }} {{ 'y' if 0 else 'n' }} [{{ 'y' if 0 }}] {{ (1 if 0) is defined }}",
     "{}", "y n [] False"},
    {"truthiness",
     "{% for v in [0, 0.0, '', [], {}, none, 1, 'a', [0], {'a': 0}] %}{{ 't' if v else 'f' }}{% "
     "endfor %}",
     "{}", "fffffftttt"},
    // Attribute and item access, undefined, slicing
    {"attr_equals_item",
     "{{ messages[0].role }} {{ messages[0]['content'] }} {{ messages[-1].content }} {{ "
     "messages|length }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"sys\"}, {\"role\": \"user\", "
     "\"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"yo\"}]}",
     "system sys yo 3"},
    {"missing_attr_prints_empty",
     "[{{ messages[0].missing }}] [{{ none.foo }}] [{{ [1][5] }}] [{{ {}['x'] }}] [{{ "
     "undefined_name }}]",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"sys\"}, {\"role\": \"user\", "
     "\"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"yo\"}]}",
     "[] [] [] [] []"},
    {"missing_attr_is_undefined",
     "{{ messages[0].missing is defined }} {{ messages[0].role is defined }} {{ undefined_name is "
     "undefined }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"sys\"}, {\"role\": \"user\", "
     "\"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"yo\"}]}",
     "False True True"},
    {"undefined_filters",
     "[{{ undefined_name|length }}][{{ undefined_name|join(',') }}][{{ undefined_name|upper }}][{{ "
     "undefined_name|default('d') }}]",
     "{}", "[0][][][d]"},
    {"nested_access",
     "{{ [1, [2, 3]].1.0 }} {{ {'a': {'b': 'c'}}.a.b }} {{ (messages|first).role }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"sys\"}, {\"role\": \"user\", "
     "\"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"yo\"}]}",
     "2 c system"},
    {"method_beats_key", "{{ {'items': 1}['items'] }} {{ {'items': 1}.items()|list }}", "{}",
     "1 [('items', 1)]"},
    {"slices",
     "{{ messages[1:]|length }} {{ messages[::-1][0].role }} {{ 'abcdef'[1:4] }} {{ 'abcdef'[::2] "
     "}} {{ [1, 2, 3, 4][-2:] }} {{ 'héllo'[::-1] }} {{ [1, 2, 3][5:] }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"sys\"}, {\"role\": \"user\", "
     "\"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"yo\"}]}",
     "2 assistant bcd ace [3, 4] olléh []"},
    {"unicode_indexing", "{{ 'héllo'|length }} {{ 'héllo'[1] }} {{ 'héllo'.find('l') }}", "{}",
     "5 é 2"},
    // Tests
    {"type_tests",
     "{{ 1 is number }} {{ true is number }} {{ 1 is integer }} {{ true is integer }} {{ 1.0 is "
     "float }} {{ 'a' is string }} {{ {} is mapping }} {{ [] is iterable }} {{ 'a' is sequence }} "
     "{{ true is boolean }} {{ none is none }}",
     "{}", "True True True False True True True True True True True"},
    {"value_tests",
     "{{ true is true }} {{ 1 is true }} {{ false is false }} {{ 4 is even }} {{ 3 is odd }} {{ 9 "
     "is divisibleby 3 }} {{ 9 is divisibleby(4) }}",
     "{}", "True False True True True True False"},
    {"comparison_tests",
     "{{ 3 is eq 3 }} {{ 3 is equalto(4) }} {{ 3 is ne 4 }} {{ 3 is lt 4 }} {{ 3 is gt(4) }} {{ 3 "
     "is ge 3 }} {{ 3 is le 2 }} {{ 1 is in [1] }} {{ 'x' is not none }} {{ 'ab' is lower }}",
     "{}", "True False True True False True False True True True"},
    // Filters
    {"string_filters",
     "{{ '  x  '|trim }}|{{ 'xxyxx'|trim('x') }}|{{ 'abc'|upper }}|{{ 'ABC'|lower }}|{{ 'hello "
     "world'|capitalize }}|{{ 'hello-world foo(bar)'|title }}|{{ 'a b  c'|wordcount }}|{{ "
     "'a-b'|replace('-', '_') }}",
     "{}", "x|y|ABC|abc|Hello world|Hello-World Foo(Bar)|3|a_b"},
    {"length_count_first_last",
     "{{ [1, 2, 3]|first }} {{ [1, 2, 3]|last }} {{ 'abc'|first }} {{ 'abc'|last }} [{{ []|first "
     "}}] {{ [1, 2]|length }} {{ {'a': 1}|count }}",
     "{}", "1 3 a c [] 2 1"},
    {"join_list_string",
     "{{ ['a', 'b']|join(', ') }} {{ [1, 2]|join }} {{ [{'n': 'x'}, {'n': 'y'}]|join(',', "
     "attribute='n') }} {{ 'abc'|list }} {{ {'a': 1}|list }} {{ 5|string ~ 'x' }}",
     "{}", "a, b 12 x,y ['a', 'b', 'c'] ['a'] 5x"},
    {"default",
     "{{ x|default('d') }} {{ ''|default('d') }} {{ ''|default('d', true) }} {{ none|d('n') }} {{ "
     "0|default(5, boolean=true) }}",
     "{}", "d  d None 5"},
    {"int_float",
     "{{ '42'|int }} {{ '42.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} {{ "
     "'0x1A'|int(base=16) }} {{ '3.5'|float }} {{ 'x'|float }} {{ 2|float }} {{ true|int }}",
     "{}", "42 42 0 7 3 26 3.5 0.0 2.0 1"},
    {"abs_round",
     "{{ -5|abs }} {{ -2.5|abs }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.567|round(2) }} {{ "
     "2.561|round(2, 'floor') }} {{ 2.561|round(1, 'ceil') }} {{ 7|round }}",
     "{}", "5 2.5 2.0 4.0 2.57 2.56 2.6 7"},
    {"sort_unique_reverse",
     "{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'c']|sort }} {{ ['b', 'A', 'c']|sort(case_sensitive=true) "
     "}} {{ [3, 1, 2]|sort(reverse=true) }} {{ [{'n': 2}, {'n': 1}]|sort(attribute='n') }} {{ [1, "
     "2, 2, 'a', 'A']|unique|list }} {{ [1, 2, 3]|reverse|list }} {{ 'abc'|reverse }}",
     "{}",
     "[1, 2, 3] ['A', 'b', 'c'] ['A', 'b', 'c'] [3, 2, 1] [{'n': 1}, {'n': 2}] [1, 2, 'a'] [3, 2, "
     "1] cba"},
    {"items_dictsort",
     "{{ {'b': 1, 'a': 2}|items|list }} {{ {'b': 1, 'a': 2}|dictsort }} {{ {'b': 1, 'a': "
     "2}|dictsort(by='value') }} {{ {'b': 1, 'a': 2}|dictsort(reverse=true) }}",
     "{}", "[('b', 1), ('a', 2)] [('a', 2), ('b', 1)] [('b', 1), ('a', 2)] [('b', 1), ('a', 2)]"},
    {"select_reject",
     "{{ [1, 2, 3, 4]|select('even')|list }} {{ [1, 2, 3, 4]|reject('even')|list }} {{ [0, 1, '', "
     "2]|select|list }} {{ [1, 2, 3]|select('gt', 1)|list }}",
     "{}", "[2, 4] [1, 3] [1, 2] [2, 3]"},
    {"selectattr_map",
     "{{ messages|selectattr('role', 'equalto', 'user')|list|length }} {{ "
     "messages|rejectattr('role', 'eq', 'user')|map(attribute='role')|join(',') }} {{ "
     "messages|map(attribute='role')|list }} {{ ['a', 'b']|map('upper')|list }} {{ [{'a': 1}, "
     "{}]|map(attribute='a', default=0)|list }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"sys\"}, {\"role\": \"user\", "
     "\"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"yo\"}]}",
     "1 system,assistant ['system', 'user', 'assistant'] ['A', 'B'] [1, 0]"},
    {"min_max_sum",
     "{{ [1, 5, 3]|max }} {{ [4, 2, 8]|min }} {{ [1, 2, 3]|sum }} {{ [{'v': 2}, {'v': "
     "3}]|sum(attribute='v') }}",
     "{}", "5 2 6 5"},
    {"indent",
     "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(2, "
     "blank=true) }}|{{ 'a\\nb'|indent('>>') }}",
     "{}", "a\n    b\n\n    c|  a\n  b|a\n  \n  b|a\n>>b"},
    {"batch_center",
     "{{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ [1, 2, 3]|batch(2, 0)|list }} [{{ 'x'|center(5) }}]",
     "{}", "[[1, 2], [3, 4], [5]] [[1, 2], [3, 0]] [  x  ]"},
    {"escape_safe", "{{ '<a href=\"x\">&\\'</a>'|e }} {{ '<b>'|escape }} {{ '<b>'|safe }}", "{}",
     "&lt;a href=&#34;x&#34;&gt;&amp;&#39;&lt;/a&gt; &lt;b&gt; <b>"},
    {"tojson_default", "{{ {'a': [1, 2.5, 'é', none, true], 'b': {'c': 'd\"\\n'}}|tojson }}", "{}",
     "{\"a\": [1, 2.5, \"é\", null, true], \"b\": {\"c\": \"d\\\"\\n\"}}"},
    {"tojson_indent", "{{ {'a': [1, {'b': 2}], 'c': [], 'd': {}}|tojson(indent=2) }}", "{}",
     "{\n  \"a\": [\n    1,\n    {\n      \"b\": 2\n    }\n  ],\n  \"c\": [],\n  \"d\": {}\n}"},
    {"tojson_options",
     "{{ {'z': 1, 'a': 2}|tojson(sort_keys=true) }} {{ 'é😀'|tojson(ensure_ascii=true) }} {{ [1, "
     "2]|tojson(separators=(',', ':')) }} {{ 1.0|tojson }} {{ 'a\\u0001\\x7f'|tojson }} {{ [1, "
     "2]|tojson(2) }}",
     "{}",
     "{\"a\": 2, \"z\": 1} \"\\u00e9\\ud83d\\ude00\" [1,2] 1.0 \"a\\u0001\x7f"
     "\" [1, 2]"},
    // Methods of str, dict and list
    {"strip_methods",
     "[{{ '  a b  '.strip() }}][{{ 'xxaxx'.strip('x') }}][{{ '\\n\\na\\n'.lstrip('\\n') }}][{{ "
     "'a\\n\\n'.rstrip() }}]",
     "{}", "[a b][a][a\n][a]"},
    {"split_methods",
     "{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a b "
     "c'.rsplit(' ', 1) }} {{ 'a</think>b</think>c'.split('</think>')[-1] }} {{ "
     "'a\\nb\\r\\nc'.splitlines() }}",
     "{}", "['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b c'] ['a b', 'c'] c ['a', 'b', 'c']"},
    {"search_methods",
     "{{ 'hello'.startswith('he') }} {{ 'hello'.endswith('lo') }} {{ 'hello'.startswith(('x', "
     "'h')) }} {{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} {{ "
     "'hello'.count('l') }}",
     "{}", "True True True 2 3 -1 2"},
    {"transform_methods",
     "{{ 'a-b'.replace('-', '+') }} {{ 'aaa'.replace('a', 'b', 2) }} {{ 'ab'.replace('', '-') }} "
     "{{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ 'Hi'.upper() }}{{ 'Hi'.lower() }} "
     "{{ ','.join(['a', 'b']) }}",
     "{}", "a+b bba -a-b- Hello World Hello HIhi a,b"},
    {"format_method",
     "{{ '{} and {}'.format(1, 'x') }} {{ '{0}{0}'.format('z') }} {{ '{a}!'.format(a=5) }}", "{}",
     "1 and x zz 5!"},
    {"dict_methods",
     "{{ {'a': 1}.get('a') }} {{ {'a': 1}.get('b') }} {{ {'a': 1}.get('b', 9) }} {{ {'a': 1, 'b': "
     "2}.keys()|list }} {{ {'a': 1, 'b': 2}.values()|list }} {{ {'a': 1}.items()|list }}",
     "{}", "1 None 9 ['a', 'b'] [1, 2] [('a', 1)]"},
    {"list_methods", "{{ [3, 1, 2].index(1) }} {{ [1, 1, 2].count(1) }}", "{}", "1 2"},
    // Globals
    {"range",
     "{{ range(5)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }} {{ range(0)|list "
     "}}",
     "{}", "[0, 1, 2, 3, 4] [1, 4, 7] [5, 3, 1] []"},
    {"dict_namespace_joiner",
     "{{ dict(a=1, b=2) }} {{ namespace(a=1).a }} {% set j = joiner(', ') %}{% for x in [1, 2, 3] "
     "%}{{ j() }}{{ x }}{% endfor %}",
     "{}", "{'a': 1, 'b': 2} 1 1, 2, 3"},
    {"namespace_repr", "{% set ns = namespace(a=1) %}{{ ns }}", "{}", "<Namespace {'a': 1}>"},
};

class JinjaRender : public testing::TestWithParam<RenderCase> {};

TEST_P(JinjaRender, MatchesJinja2) {
  const RenderCase& c = GetParam();
  std::string out;
  try {
    out = render(c.source, nlohmann::ordered_json::parse(c.vars));
  } catch (const TemplateError& e) {
    FAIL() << c.name << ": " << e.what();
  }
  EXPECT_EQ(out, c.expected) << c.name << "\nsource: " << c.source;
}

INSTANTIATE_TEST_SUITE_P(Jinja, JinjaRender, testing::ValuesIn(kRenderCases),
                         [](const testing::TestParamInfo<RenderCase>& info) {
                           return std::string(info.param.name);
                         });

struct ErrorCase {
  const char* name;
  const char* source;
  TemplateError::Kind kind;
  const char* message;  // a substring of what()
  int line;             // expected line, 0 to skip the check
};

constexpr auto kSyntax = TemplateError::Kind::kSyntax;
constexpr auto kRender = TemplateError::Kind::kRender;
constexpr auto kRaised = TemplateError::Kind::kRaised;

const ErrorCase kErrorCases[] = {
    // Syntax errors come from the constructor, with line and column.
    {"unclosed_if", "{% if x %}\nabc", kSyntax, "expected 'elif', 'else' or 'endif'", 2},
    {"unknown_filter", "ok\n{{ 1 | nosuchfilter }}", kSyntax, "No filter named 'nosuchfilter'", 2},
    {"unknown_test", "{{ 1 is nosuchtest }}", kSyntax, "No test named 'nosuchtest'", 1},
    {"unknown_filter_in_loop_in_if",
     "{% if x %}{% for a in b %}{{ a|nope }}{% endfor %}{% endif %}", kSyntax,
     "No filter named 'nope'", 1},
    {"unbalanced_paren", "a\nb\n{{ (1 }}", kSyntax, "unexpected '}', expected ')'", 3},
    {"stray_end_tag", "{% endif %}", kSyntax, "Encountered unknown tag 'endif'", 1},
    {"break_outside_loop", "{% break %}", kSyntax, "'break' outside of a loop", 1},
    {"include_unsupported", "{% include 'x' %}", kSyntax, "'include' tag is not supported", 1},
    {"recursive_loop", "{% for x in xs recursive %}{% endfor %}", kSyntax, "recursive loops", 1},
    {"do_tag_not_enabled", "{% do x %}", kSyntax, "unknown tag 'do'", 1},
    {"unterminated_print", "{{ x", kSyntax, "unexpected end of template", 1},
    {"unterminated_comment", "{# x", kSyntax, "Missing end of comment tag", 1},
    {"unterminated_raw", "{% raw %} x", kSyntax, "Missing end of raw directive", 1},
    {"unterminated_string", "{{ 'abc }}", kSyntax, "unterminated string", 1},
    {"bad_character", "{{ a ! b }}", kSyntax, "unexpected char '!'", 1},
    {"missing_expression", "{% set x = %}", kSyntax, "expected an expression", 1},
    {"tests_cannot_chain", "{{ x is defined is none }}", kSyntax, "", 1},
    // Render errors, with Python's wording and the line they happened on.
    {"attribute_of_undefined", "a\n{{ x.y }}", kRender, "'x' is undefined", 2},
    {"unknown_filter_run_in_if", "{% if true %}\n{{ x|nope }}{% endif %}", kRender,
     "No filter named 'nope' found.", 2},
    {"undefined_arithmetic", "{{ x + 1 }}", kRender, "'x' is undefined", 1},
    {"attribute_of_missing_key", "{{ {}.bar.baz }}", kRender,
     "'dict object' has no attribute 'bar'", 1},
    {"int_plus_str", "{{ 1 + 'a' }}", kRender, "unsupported operand type(s) for +: 'int' and 'str'",
     1},
    {"str_plus_int", "{{ 'a' + 1 }}", kRender, "can only concatenate str (not \"int\") to str", 1},
    {"list_append_is_unsafe", "{% set l = [1] %}{{ l.append(2) }}", kRender,
     "access to attribute 'append' of 'list' object is unsafe.", 1},
    {"dict_update_is_unsafe", "{{ {}.update({}) }}", kRender, "'update' of 'dict' object is unsafe",
     1},
    {"division_by_zero", "{{ 1 / 0 }}", kRender, "division by zero", 1},
    {"modulo_by_zero", "{{ 1 % 0 }}", kRender, "integer division or modulo by zero", 1},
    {"call_undefined", "{{ foo() }}", kRender, "'foo' is undefined", 1},
    {"call_string", "{{ 'a'() }}", kRender, "'str' object is not callable", 1},
    {"order_mixed_types", "{{ 'a' < 1 }}", kRender,
     "'<' not supported between instances of 'str' and 'int'", 1},
    {"length_of_int", "{{ 5|length }}", kRender, "object of type 'int' has no len()", 1},
    {"tojson_undefined", "{{ x|tojson }}", kRender,
     "Object of type Undefined is not JSON serializable", 1},
    {"set_attr_on_non_namespace", "{% set ns = 1 %}{% set ns.x = 2 %}", kRender,
     "cannot assign attribute on non-namespace object", 1},
    {"unpack_too_many", "{% for a, b in [[1, 2, 3]] %}{% endfor %}", kRender,
     "too many values to unpack", 1},
    {"unpack_too_few", "{% set a, b = [1] %}", kRender, "not enough values to unpack", 1},
    {"macro_too_many_args", "{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", kRender,
     "macro 'm' takes not more than 1 argument(s)", 1},
    {"macro_unknown_kwarg", "{% macro m(a) %}{% endmacro %}{{ m(b=1) }}", kRender,
     "macro 'm' takes no keyword argument 'b'", 1},
    {"filter_bad_kwarg", "{{ 'a'|trim(nope=1) }}", kRender, "unexpected keyword argument 'nope'",
     1},
    {"in_none", "{{ 'a' in none }}", kRender, "argument of type 'NoneType' is not iterable", 1},
    {"iterate_int", "{% for x in 5 %}{% endfor %}", kRender, "'int' object is not iterable", 1},
    {"empty_separator", "{{ 'a'.split('') }}", kRender, "empty separator", 1},
    {"integer_overflow", "{{ 2 ** 64 }}", kRender, "integer result is too large", 1},
    {"slice_float_bound", "{% set f = 1.0 %}{{ 'abc'[f:] }}", kRender,
     "slice indices must be integers or None", 1},
    {"slice_none", "{% set n = none %}{{ n[1:] }}", kRender,
     "'NoneType' object is not subscriptable", 1},
    {"unhashable_key", "{{ {[1]: 2} }}", kRender, "unhashable type: 'list'", 1},
    // raise_exception() gives exactly its message.
    {"raise_exception", "{{ raise_exception('Conversation roles must alternate') }}", kRaised,
     "Conversation roles must alternate", 0},
};

class JinjaError : public testing::TestWithParam<ErrorCase> {};

TEST_P(JinjaError, RaisesTemplateError) {
  const ErrorCase& c = GetParam();
  try {
    render(c.source);
    FAIL() << c.name << ": no error";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), c.kind) << c.name << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos)
        << c.name << ": " << e.what();
    if (c.line > 0) {
      EXPECT_EQ(e.line(), c.line) << c.name << ": " << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Jinja, JinjaError, testing::ValuesIn(kErrorCases),
                         [](const testing::TestParamInfo<ErrorCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(JinjaError, RaisedMessageIsExact) {
  try {
    render("{% if messages|length == 0 %}{{ raise_exception('no messages') }}{% endif %}",
           {{"messages", nlohmann::ordered_json::array()}});
    FAIL();
  } catch (const TemplateError& e) {
    EXPECT_STREQ(e.what(), "no messages");
    EXPECT_EQ(e.message(), "no messages");
  }
}

TEST(JinjaError, SyntaxErrorHasColumn) {
  try {
    Template t("{{ a }}\n  {{ b | nosuch }}");
    FAIL();
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.column(), 10);
    EXPECT_NE(std::string(e.what()).find("line 2, column 10"), std::string::npos) << e.what();
  }
}

// Hostile templates hit a limit and fail instead of hanging or exhausting memory.
struct LimitCase {
  const char* name;
  std::string source;
  const char* message;
};

std::vector<LimitCase> limit_cases() {
  return {
      {"huge_range", "{% for i in range(10**9) %}{% endfor %}", "Range too big"},
      {"endless_recursion", "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
       "macro calls nested deeper"},
      {"string_repetition", "{{ 'x' * 10**12 }}", "longer than the limit"},
      {"string_doubling",
       "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% "
       "endfor %}",
       "longer than"},
      {"list_doubling",
       "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% "
       "endfor %}",
       "longer than the limit"},
      {"output_flood", "{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}",
       "output is longer than"},
      {"allocation_churn", "{% for i in range(100000) %}{% set s = 'x' * 1000000 %}{% endfor %}",
       "allocated more than"},
      {"deep_value",
       "{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set ns.l = [ns.l] %}{% endfor "
       "%}",
       "nesting is deeper than"},
      {"shared_sublists_compared",
       "{% set ns = namespace(a=[], b=[]) %}{% for i in range(200) %}{% set ns.a = [ns.a, ns.a] %}"
       "{% set ns.b = [ns.b, ns.b] %}{% endfor %}{{ ns.a == ns.b }}",
       "allocated more than"},
      {"shared_sublists_printed",
       "{% set ns = namespace(a=[]) %}{% for i in range(200) %}{% set ns.a = [ns.a, ns.a] %}"
       "{% endfor %}{{ ns.a }}",
       "longer than the limit"},
      {"json_indent_flood", "{{ range(100000)|list|tojson(indent=1000) }}",
       "longer than the limit"},
      {"huge_indent", "{{ 'x'|indent(10**9) }}", "longer than the limit"},
      {"huge_format_width", "{{ '%999999999s' % 1 }}", "unsupported format specifier"},
      {"namespace_cycle", "{% set ns = namespace() %}{% set ns.me = [ns] %}",
       "cannot hold a namespace"},
      {"deep_expression", "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}",
       "nesting is too deep"},
      {"deep_blocks",
       [] {
         std::string s;
         for (int i = 0; i < 1000; ++i) s += "{% if true %}";
         for (int i = 0; i < 1000; ++i) s += "{% endif %}";
         return s;
       }(),
       "nesting is too deep"},
  };
}

TEST(JinjaLimits, HostileTemplatesFailCleanly) {
  Options options;
  options.limits.max_steps = 2'000'000;
  options.limits.max_output_bytes = 1 << 20;
  options.limits.max_string_bytes = 1 << 20;
  options.limits.max_alloc_bytes = 64 << 20;
  for (const LimitCase& c : limit_cases()) {
    try {
      render(c.source, {}, options);
      ADD_FAILURE() << c.name << ": no error";
    } catch (const TemplateError& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos)
          << c.name << ": " << e.what();
    }
  }
}

TEST(JinjaLimits, StepLimitStopsLongLoops) {
  Options options;
  options.limits.max_steps = 50'000;
  try {
    render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", {},
           options);
    FAIL();
  } catch (const TemplateError& e) {
    EXPECT_NE(std::string(e.what()).find("more than 50000 steps"), std::string::npos) << e.what();
  }
}

TEST(JinjaLimits, DefaultLimitsStopANestedLoop) {
  try {
    render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}");
    FAIL();
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), TemplateError::Kind::kRender) << e.what();
  }
}

TEST(JinjaLimits, DeepJsonInputIsRejected) {
  nlohmann::ordered_json deep = 1;
  for (int i = 0; i < 2000; ++i) deep = nlohmann::ordered_json::array({deep});
  EXPECT_THROW(render("{{ x }}", {{"x", deep}}), TemplateError);
}

TEST(JinjaValues, JsonObjectsKeepInsertionOrder) {
  auto vars = nlohmann::ordered_json::parse(R"({"d": {"zeta": 1, "alpha": 2, "mid": 3}})");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}{{ v }} {% endfor %}{{ d|tojson }}", vars),
            "zeta1 alpha2 mid3 {\"zeta\": 1, \"alpha\": 2, \"mid\": 3}");
}

TEST(JinjaValues, JsonRoundTrip) {
  auto j = nlohmann::ordered_json::parse(R"({"b": [1, 2.5, "x", null, true, {"c": {}}], "a": -3})");
  EXPECT_EQ(Value::from_json(j).to_json(), j);
  EXPECT_THROW(Value().to_json(), TemplateError);
}

TEST(JinjaValues, NumbersFollowPython) {
  EXPECT_EQ(render("{{ x }} {{ y }} {{ x + y }} {{ x is integer }} {{ y is float }}",
                   {{"x", 3}, {"y", 0.5}}),
            "3 0.5 3.5 True True");
  EXPECT_EQ(render("{{ big }} {{ big + 1 }}", {{"big", 9007199254740993}}),
            "9007199254740993 9007199254740994");
}

TEST(JinjaTemplate, RendersConcurrentlyFromOneTemplate) {
  Template t("{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}");
  auto vars = nlohmann::ordered_json::parse(R"({"messages": [{"role": "user", "content": "hi"}]})");
  std::vector<std::string> outs(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < outs.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 200; ++k) outs[i] = t.render(vars);
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& o : outs) EXPECT_EQ(o, "user:hi;");
}

TEST(JinjaTemplate, StrftimeNowFormatsTheCurrentDate) {
  std::string year = render("{{ strftime_now('%Y') }}");
  ASSERT_EQ(year.size(), 4u);
  EXPECT_GE(std::stoi(year), 2024);
}

}  // namespace
}  // namespace sy::jinja
