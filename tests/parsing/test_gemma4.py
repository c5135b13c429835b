import json

from tokenyard.conversation import ToolSpec
from tokenyard.events import ToolCallDelta, ToolCallReady, ToolCallStart
from tokenyard.parsing.json_stream import JsonValueScanner

from .support import WEATHER, parse, run_chunks, splitter_factory, summary

Q = '<|"|>'
LITERAL = '<|tool_call>call:get_weather{city:<|"|>Tokyo<|"|>,days:3}<tool_call|>'
PARIS = LITERAL.replace("Tokyo", "Paris").replace("days:3", "days:2")

gemma = splitter_factory(None, "gemma4", [WEATHER])
untyped = splitter_factory(None, "gemma4", None)
gemma_reasoning = splitter_factory("gemma4", "gemma4", [WEATHER])


def call(name: str, body: str) -> str:
    return f"<|tool_call>call:{name}{{{body}}}<tool_call|>"


def arguments_of(events) -> list[str]:
    return [e.arguments for e in events if isinstance(e, ToolCallReady)]


def test_reference_literal():
    events = parse(gemma, LITERAL)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = next(e for e in events if isinstance(e, ToolCallReady))
    assert ready.arguments == '{"city": "Tokyo", "days": 3}'
    assert ready.raw == LITERAL


def test_nested_objects_arrays_and_scalars():
    body = f"a:{{x:1,y:{Q}q{Q},z:{{}}}},xs:[1,-2.5,3e2],ss:[{Q}a{Q},{Q}b{Q}],e:[],flag:true,off:false,none:null,deep:[[{{k:[]}}]]"
    events = parse(untyped, call("g", body))
    assert arguments_of(events) == [
        (
            '{"a": {"x": 1, "y": "q", "z": {}}, "xs": [1, -2.5, 3e2], "ss": ["a", "b"], "e": [], '
            '"flag": true, "off": false, "none": null, "deep": [[{"k": []}]]}'
        )
    ]


def test_strings_are_atomic_and_escaped_into_json():
    value = 'a{b},c[d] "quoted" back\\slash\nnewline 東京 🌸 <tool_call|><|tool_call>call:x{}'
    events = parse(untyped, call("h", f"q:{Q}{value}{Q}"))
    assert summary(events) == [("call", "h", {"q": value})]


def test_quoted_keys_python_literals_and_whitespace():
    body = f" {Q}my key{Q} : True , other : None , n : +4 "
    assert summary(parse(untyped, call("f", body))) == [("call", "f", {"my key": True, "other": None, "n": 4})]


def test_empty_arguments():
    events = parse(gemma, "<|tool_call>call:get_weather{}<tool_call|>")
    assert arguments_of(events) == ["{}"]


def test_a_key_without_a_value_is_an_empty_string():
    # vLLM's and Dynamo's test_empty_value: `key:` before `,` or `}` is "".
    for body, expected in (("x:,y:1", {"x": "", "y": 1}), ("x:1,y:", {"x": 1, "y": ""})):
        assert summary(parse(untyped, call("f", body))) == [("call", "f", expected)]
    # Inside an array an empty element is still broken syntax.
    assert summary(parse(untyped, call("f", "xs:[1,,2]")))[0][0] != "call"


def test_null_spellings():
    # Dynamo's args_grammar_null_aliases_case_insensitive (vLLM lowercases the word too).
    body = "a:NULL,b:nil,c:Nil,d:none"
    assert summary(parse(untyped, call("f", body))) == [("call", "f", dict.fromkeys("abcd"))]
    # A declared string parameter keeps the word.
    tool = ToolSpec(name="f", parameters={"type": "object", "properties": {"a": {"type": "string"}}})
    typed = splitter_factory(None, "gemma4", [tool])
    assert summary(parse(typed, call("f", "a:nil"))) == [("call", "f", {"a": "nil"})]


def test_schema_coerces_top_level_values():
    tool = ToolSpec(
        name="f",
        parameters={"properties": {"zip": {"type": "string"}, "n": {"type": "integer"}, "deep": {"type": "object"}}},
    )
    body = f"zip:01234,n:{Q}7{Q},deep:{{n:{Q}7{Q}}},free:{Q}8{Q}"
    events = parse(splitter_factory(None, "gemma4", [tool]), call("f", body))
    # Only top-level members follow the schema; nested values are as written.
    assert arguments_of(events) == ['{"zip": "01234", "n": 7, "deep": {"n": "7"}, "free": "8"}']


def test_strings_stream_as_they_arrive():
    splitter = gemma()
    events = splitter.feed('<|tool_call>call:get_weather{city:<|"|>Tok')
    assert any(isinstance(e, ToolCallStart) for e in events)
    assert "".join(e.arguments for e in events if isinstance(e, ToolCallDelta)) == '{"city": "Tok'


def test_truncated():
    head = "<|tool_call>call:get_weather{"
    for text in (
        head,
        head + 'city:<|"|>Tok',
        head + 'city:<|"|>Tokyo<|',
        head + "days:",
        head + "days:<|",
        head + "days:3",
    ):
        assert summary(parse(gemma, text)) == [("incomplete", "get_weather", "truncated")], text
    # The arguments closed and only `<tool_call|>` is missing: the call is whole.
    for tail in ("", "<tool_", "\n"):
        text = head + "days:3}" + tail
        assert summary(parse(gemma, text)) == [("call", "get_weather", {"days": 3})], text


def test_invalid_arguments_do_not_take_the_next_call():
    text = "Before " + call("bad", "xs:[1,}") + LITERAL + " after"
    assert summary(parse(untyped, text)) == [
        ("text", "Before"),
        ("incomplete", "bad", "invalid_arguments"),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("text", "after"),
    ]


def test_unclosed_call_resyncs_at_the_next_one():
    text = "<|tool_call>call:bad{x:1" + LITERAL
    assert summary(parse(untyped, text)) == [
        ("incomplete", "bad", "invalid_arguments"),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_missing_closing_marker_before_more_text():
    text = '<|tool_call>call:get_weather{city:<|"|>Oslo<|"|>} and then prose'
    assert summary(parse(gemma, text)) == [("call", "get_weather", {"city": "Oslo"}), ("text", "and then prose")]


def test_not_a_call_is_text():
    text = "Use <|tool_call>not-a-call{x:2}<tool_call|> carefully, and <|tool_call>call:{x:1}."
    assert summary(parse(gemma, text)) == [("text", text)]


def test_interleaved_with_reasoning_in_order():
    text = (
        "<|channel>thought\nTokyo first.<channel|>"
        + LITERAL
        + "<|channel>thought\nNow Paris.<channel|>"
        + PARIS
        + "Both done."
    )
    assert summary(parse(gemma_reasoning, text)) == [
        ("reasoning", "Tokyo first."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("reasoning", "Now Paris."),
        ("call", "get_weather", {"city": "Paris", "days": 2}),
        ("text", "Both done."),
    ]


def test_call_inside_reasoning_ends_it():
    text = "<|channel>thought\nI will call it." + LITERAL + "Done."
    assert summary(parse(gemma_reasoning, text)) == [
        ("reasoning", "I will call it."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("text", "Done."),
    ]


def test_every_delta_prefix_is_a_json_prefix():
    body = f"a:{{x:[1,{Q}two{Q},{{}},]}},b:{Q}three{Q},"  # trailing commas are dropped
    joined = ""
    for event in run_chunks(untyped, list(call("f", body))):
        if isinstance(event, ToolCallDelta):
            joined += event.arguments
            JsonValueScanner().feed(joined)  # raises if not a prefix of valid JSON
    assert json.loads(joined) == {"a": {"x": [1, "two", {}]}, "b": "three"}


def test_a_string_whose_opening_delimiter_was_left_out():
    # SGLang's gemma4 string-delimiter tests: the model writes only the closing `<|"|>`.
    from .support import WEATHER, parse, splitter_factory, summary

    make = splitter_factory(None, "gemma4", [WEATHER])
    q = '<|"|>'
    text = f"<|tool_call>call:get_weather{{city:Paris, France{q},days:3,opts:{{unit:metric{q}}},tags:[{q}a{q},b{q}]}}<tool_call|>"
    assert summary(parse(make, text)) == [
        ("call", "get_weather", {"city": "Paris, France", "days": 3, "opts": {"unit": "metric"}, "tags": ["a", "b"]})
    ]
    # A bare value followed by a key is no string: `5` stays a number.
    text = f"<|tool_call>call:get_weather{{days:5,city:{q}Oslo: a, b{q}}}<tool_call|>"
    assert summary(parse(make, text)) == [("call", "get_weather", {"days": 5, "city": "Oslo: a, b"})]


def test_stray_colon_after_the_call_token_is_read():
    # vLLM's test_gemma4_regex_and_bare_calls.py: `<|tool_call>:call:bash{...}`.
    text = '<|tool_call>:call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>'
    assert summary(parse(gemma, text)) == [("call", "get_weather", {"city": "Paris"})]


# A call whose `<|tool_call>` token was dropped (vLLM's test_gemma4_regex_and_bare_calls.py):
# read only where it opens the answer.
BARE = 'call:get_weather{city:<|"|>Tokyo<|"|>,days:3}'
TOKYO = ("call", "get_weather", {"city": "Tokyo", "days": 3})


def test_bare_call_opening_the_output_is_read():
    for text in (BARE, "\n  " + BARE, BARE + "<tool_call|>"):
        events = parse(gemma, text)
        assert summary(events) == [TOKYO], text
        assert next(e for e in events if isinstance(e, ToolCallReady)).raw == text.lstrip()
    # Prose after it is text; the call stands without its closing token.
    assert summary(parse(gemma, BARE + " Checking now.")) == [TOKYO, ("text", "Checking now.")]
    # Without declared tools any function name is read (dotted, hyphenated).
    assert summary(parse(untyped, 'call:fs.read-file{path:<|"|>/a<|"|>}')) == [("call", "fs.read-file", {"path": "/a"})]


def test_bare_call_after_the_thought_channel_is_read():
    for text in (
        "<|channel>thought\nTokyo first.<channel|>" + BARE,
        "<|channel>thought\nTokyo first.\n<channel|>\n" + BARE,
        "<channel|>" + BARE,  # the channel's opener was never written
    ):
        expected = [("reasoning", "Tokyo first."), TOKYO] if "thought" in text else [TOKYO]
        assert summary(parse(gemma_reasoning, text)) == expected, text


def test_bare_call_after_prose_stays_text():
    for text in (
        "Here is how: " + BARE,
        "some prose\n" + BARE,
        '<call>get_weather{city:<|"|>Paris<|"|>}',  # not Gemma's call token
        "<|channel>thought\nHmm.<channel|>Sure. " + BARE,
    ):
        assert [kind for kind, *_ in summary(parse(gemma_reasoning, text))] in (["text"], ["reasoning", "text"]), text
    # Only the first call head opens the answer: after a call, a bare one is text.
    assert summary(parse(gemma, LITERAL + BARE)) == [
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("text", BARE),
    ]
    assert summary(parse(gemma, BARE + BARE)) == [TOKYO, ("text", BARE)]
    # A bare head cut by a reasoning block was the answer's first text.
    text = 'call:get<|channel>thought\nx<channel|>_weather{city:<|"|>Tokyo<|"|>}'
    assert summary(parse(gemma_reasoning, text)) == [
        ("text", "call:get"),
        ("reasoning", "x"),
        ("text", '_weather{city:<|"|>Tokyo<|"|>}'),
    ]


def test_bare_call_to_an_undeclared_tool_stays_text():
    text = 'call:rm_rf{path:<|"|>/<|"|>}'
    assert summary(parse(gemma, text)) == [("text", text)]
    # A token-started call to it is the model's call, flagged undeclared.
    assert summary(parse(gemma, call("rm_rf", 'path:<|"|>/<|"|>'))) == [("call", "rm_rf", {"path": "/"})]


def test_bare_call_holds_only_what_can_still_become_a_declared_call():
    splitter = gemma()
    assert summary(splitter.feed("  call:get_wea")) == []  # may still be `call:get_weather{`
    assert summary(splitter.feed("ther")) == []
    assert [type(e) for e in splitter.feed("{")] == [ToolCallStart, ToolCallDelta]
    # No declared tool begins `rm`: the text goes as soon as that is known.
    splitter = gemma()
    assert summary(splitter.feed("call:r")) == [("text", "call:r")]
    for opening in ("Hello", "cx", "call:get_weather "):
        assert summary(gemma().feed(opening)) == [("text", opening.strip())], opening


def test_bare_call_split_at_every_character_boundary():
    # parse() feeds every two-piece split, one character at a time, and random
    # chunkings, and checks they all agree and conserve every character.
    text = (
        '<|channel>thought\nList it.\n<channel|>\ncall:get_weather{city:<|"|>Tōkyō {x}<|"|>,days:3}<tool_call|>\nDone.'
    )
    assert summary(parse(gemma_reasoning, text)) == [
        ("reasoning", "List it."),
        ("call", "get_weather", {"city": "Tōkyō {x}", "days": 3}),
        ("text", "Done."),
    ]
    for broken in ('call:get_weather{city:<|"|>Tok', "call:get_weather{city Tokyo} then prose"):
        events = parse(gemma, broken)
        assert summary(events)[0][0] == "incomplete", broken


def test_functiongemma_reads_calls_at_its_token_only():
    text = "call:get_weather{city:<escape>Tokyo<escape>}"
    assert summary(parse(splitter_factory(None, "functiongemma", [WEATHER]), text)) == [("text", text)]


def test_the_tool_response_token_after_a_call_is_a_marker_not_text():
    text = '<|tool_call>call:get_weather{city:<|"|>Tokyo<|"|>}<tool_call|><|tool_response>'
    assert summary(parse(gemma, text)) == [("call", "get_weather", {"city": "Tokyo"})]
