"""prefix_watch on character-level token ids (ord), so positions are readable."""

import logging
from array import array

from hypothesis import given
from hypothesis import strategies as st

from tokenyard.prompting import prefix_watch as pw
from tokenyard.prompting.prefix_watch import PrefixWatch, PromptFacts
from tokenyard.prompting.streams import StreamKind


def toks(text):
    return [ord(c) for c in text]


def decode(ids):
    return "".join(map(chr, ids))


SYSTEM = "<|im_start|>system\nYou are a coding agent." + " Follow the rules." * 10 + "<|im_end|>\n"
TOOLS = '<tools>{"name": "Bash"}{"name": "Read"}</tools>\n'
TURN1 = "<|im_start|>user\nfix the bug<|im_end|>\n<|im_start|>assistant\n"
OUT1 = "<think>\nlook at main.py first\n</think>\n\n<tool_call>Bash</tool_call><|im_end|>\n"
TURN2 = "<|im_start|>user\n<tool_response>ok</tool_response><|im_end|>\n<|im_start|>assistant\n"
FACTS = PromptFacts(tool_names=("Bash", "Read"), system_digest="s1")


def watch_two(first, second, facts1=FACTS, facts2=FACTS):
    watch = PrefixWatch()
    one = watch.observe("s", toks(first), decode, facts1)
    two = watch.observe("s", toks(second), decode, facts2)
    return one, two


def test_growing_session_is_stable_and_fully_matched():
    first = SYSTEM + TOOLS + TURN1
    one, two = watch_two(first, first + OUT1 + TURN2)
    assert one.matched_tokens == 0 and one.previous_tokens == 0 and one.stable
    assert two.stable and two.matched_tokens == len(first) == two.previous_tokens


def test_billing_header_change():
    header = "x-anthropic-billing-header: cc_version=2.1.330.{}; cc_entrypoint=sdk-cli;\n"
    _, two = watch_two(header.format("a3f") + SYSTEM + TURN1, header.format("a9c") + SYSTEM + TURN1)
    assert two.divergence.cause == pw.CAUSE_BILLING_HEADER
    assert two.divergence.position == header.index("{}") + 1  # "a3f" vs "a9c": the 2nd hex char
    assert two.divergence.previous.startswith("3f;") and two.divergence.current.startswith("9c;")


def test_changed_reasoning():
    prefix = SYSTEM + TOOLS + TURN1
    _, two = watch_two(prefix + OUT1 + TURN2, prefix + OUT1.replace("main.py first", "main.py") + TURN2)
    d = two.divergence
    assert d.cause == pw.CAUSE_CHANGED_REASONING
    assert d.position == len(prefix) + OUT1.index(" first")
    assert d.before.endswith("look at main.py")


def test_reordered_tools():
    swapped = TOOLS.replace('{"name": "Bash"}{"name": "Read"}', '{"name": "Read"}{"name": "Bash"}')
    _, two = watch_two(SYSTEM + TOOLS + TURN1, SYSTEM + swapped + TURN1, FACTS, PromptFacts(("Read", "Bash"), "s1"))
    assert two.divergence.cause == pw.CAUSE_REORDERED_TOOLS


def test_changed_tools():
    more = TOOLS.replace("</tools>", '{"name": "Edit"}</tools>')
    _, two = watch_two(
        SYSTEM + TOOLS + TURN1, SYSTEM + more + TURN1, FACTS, PromptFacts(("Bash", "Read", "Edit"), "s1")
    )
    assert two.divergence.cause == pw.CAUSE_CHANGED_TOOLS


def test_changed_system_prompt():
    other = SYSTEM.replace("coding agent", "coding assistant")
    _, two = watch_two(SYSTEM + TURN1, other + TURN1, FACTS, PromptFacts(("Bash", "Read"), "s2"))
    assert two.divergence.cause == pw.CAUSE_CHANGED_SYSTEM


def test_changed_history():
    _, two = watch_two(SYSTEM + TURN1 + OUT1, SYSTEM + TURN1.replace("bug", "bugs") + OUT1)
    assert two.divergence.cause == pw.CAUSE_CHANGED_HISTORY
    assert "fix the bug" in two.divergence.before + two.divergence.previous


def test_shorter_prompt_that_is_a_prefix_is_not_a_divergence_of_content():
    first = SYSTEM + TURN1 + OUT1
    _, two = watch_two(first, first[:50])
    # Everything the new prompt has matches; it just stops earlier than the last one.
    assert two.matched_tokens == 50 and two.divergence is not None and two.divergence.current == ""


def test_sessions_are_independent_and_bounded():
    watch = PrefixWatch(max_sessions=3)
    for i in range(5):
        watch.observe(f"s{i}", toks(SYSTEM), decode)
    assert len(watch) == 3
    assert watch.observe("s0", toks(SYSTEM), decode).previous_tokens == 0  # evicted
    assert watch.observe("s4", toks(SYSTEM), decode).matched_tokens == len(SYSTEM)


def test_a_prompt_is_remembered_in_four_bytes_a_token():
    watch = PrefixWatch()
    prompt = list(range(150_000, 151_000)) * 12  # a Claude Code-sized prompt, ids of a large vocabulary
    watch.observe("s", prompt, decode=lambda ids: "")
    remembered = watch._sessions["s"].branches[-1].tokens
    assert remembered.itemsize == 4 and remembered.tolist() == prompt  # one buffer, no object per id


IDS = st.lists(st.integers(0, 2), max_size=40)  # few values: long shared runs


@given(IDS, IDS, IDS)
def test_the_shared_prefix_is_where_the_first_id_differs(common, one, other):
    old, new = common + one, common + other
    expected = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new)))
    assert pw.shared_prefix(array("I", old), array("I", new)) == expected


COMPACT = "<|im_start|>user\nCRITICAL: Respond with TEXT ONLY. Summarise.<|im_end|>\n<|im_start|>assistant\n"


def test_a_fork_is_not_a_divergence_and_the_stream_goes_on_from_before_it():
    watch = PrefixWatch()
    turn1 = SYSTEM + TOOLS + TURN1
    turn2 = turn1 + OUT1 + TURN2
    watch.observe("s", toks(turn1), decode, FACTS)
    fork = watch.observe("s", toks(turn1 + OUT1 + COMPACT), decode, FACTS, kind=StreamKind.COMPACTION)
    assert fork.stable and fork.kind == "compaction" and fork.matched_tokens == len(turn1)
    [(level, line)] = fork.diagnostics()
    assert level == logging.INFO and "compaction request" in line
    # The conversation goes on from before the fork: it extends turn 1, not the fork.
    after = watch.observe("s", toks(turn2), decode, FACTS)
    assert after.stable and after.matched_tokens == len(turn1)


def test_the_first_request_after_a_compaction_starts_the_stream_over():
    watch = PrefixWatch()
    watch.observe("s", toks(SYSTEM + TOOLS + TURN1 + OUT1), decode, FACTS)
    resumed = SYSTEM + TOOLS + "<|im_start|>user\nThis session is being continued…<|im_end|>\n"
    report = watch.observe("s", toks(resumed), decode, FACTS, kind=StreamKind.RESUMED)
    assert report.stable and report.new_stream
    assert report.diagnostics()[0][0] == logging.INFO
    later = watch.observe("s", toks(resumed + TURN1), decode, FACTS, kind=StreamKind.RESUMED)
    assert later.stable and not later.new_stream and later.matched_tokens == len(resumed)


def test_a_subagent_is_its_own_stream_and_records_its_parent():
    watch = PrefixWatch()
    watch.observe("s/main/m", toks(SYSTEM + TOOLS + TURN1), decode, FACTS)
    child = watch.observe("s/a1/m", toks(SYSTEM + "<|im_start|>user\nsub task"), decode, FACTS, parent="main")
    assert child.stable and child.new_stream and child.parent == "main"
    [(level, line)] = child.diagnostics()
    assert level == logging.INFO and "started by agent main" in line
    again = watch.observe("s/a1/m", toks(SYSTEM + "<|im_start|>user\nsub task more"), decode, FACTS)
    assert again.parent == "main" and again.stable


def test_diagnostics_name_position_counts_and_cause_but_no_text_by_default():
    marker = "PROMPT-SECRET-MARKER"
    _, two = watch_two(SYSTEM + TURN1 + marker, SYSTEM + TURN1.replace("bug", "bugs") + marker)
    [(level, line)] = two.diagnostics()
    assert level == logging.WARNING
    assert f"token {two.divergence.position}" in line and "changed conversation history" in line
    assert "fix the bug" not in line and marker not in line and "im_start" not in line
    [(_, verbose)] = two.diagnostics(excerpts=True)
    assert "fix the bug" in verbose


QUESTION2 = "<|im_start|>user\nnow add a test<|im_end|>\n<|im_start|>assistant\n"


def test_a_template_dropping_earlier_reasoning_at_a_new_user_turn_is_expected():
    """Qwen3's template keeps only the current agentic turn's reasoning: at a new user
    turn the earlier turn's `<think>` block is gone. Its own cause, logged below
    WARNING; the same drop without a new user turn is a real divergence."""
    prefix = SYSTEM + TOOLS + TURN1
    dropped = OUT1.split("</think>\n\n", 1)[1]
    turn1 = PromptFacts(("Bash", "Read"), "s1", user_turns=1)
    turn2 = PromptFacts(("Bash", "Read"), "s1", user_turns=2)
    _, two = watch_two(prefix + OUT1 + TURN2, prefix + dropped + TURN2 + QUESTION2, turn1, turn2)
    assert two.divergence.cause == pw.CAUSE_TEMPLATE_DROPPED_REASONING and two.divergence.expected
    assert len(prefix) <= two.divergence.position < len(prefix) + len("<think>")  # characters as tokens
    [(level, line)] = two.diagnostics()
    assert level < logging.WARNING and pw.CAUSE_TEMPLATE_DROPPED_REASONING in line
    _, same_turn = watch_two(prefix + OUT1 + TURN2, prefix + dropped + TURN2, turn1, turn1)
    assert same_turn.divergence.cause != pw.CAUSE_TEMPLATE_DROPPED_REASONING
    assert same_turn.diagnostics()[0][0] == logging.WARNING


def test_side_queries_diverging_from_each_other_are_their_own_cause():
    watch = PrefixWatch()
    title = SYSTEM + "<|im_start|>user\nWrite a title<|im_end|>\n"
    classify = SYSTEM + "<|im_start|>user\nIs this command safe?<|im_end|>\n"
    watch.observe("s#side", toks(title), decode, FACTS, kind=StreamKind.SIDE_QUERY)
    report = watch.observe("s#side", toks(classify), decode, FACTS, kind=StreamKind.SIDE_QUERY)
    assert report.divergence.cause == pw.CAUSE_SIDE_QUERY and report.divergence.expected
    assert report.diagnostics()[0][0] < logging.WARNING
