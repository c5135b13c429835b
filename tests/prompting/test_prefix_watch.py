"""prefix_watch on character-level token ids (ord), so positions are readable."""

from tokenyard.prompting import prefix_watch as pw
from tokenyard.prompting.prefix_watch import PrefixWatch, PromptFacts


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
    watch = PrefixWatch(block_size=8)
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
    watch = PrefixWatch(block_size=8, max_sessions=3)
    for i in range(5):
        watch.observe(f"s{i}", toks(SYSTEM), decode)
    assert len(watch) == 3
    assert watch.observe("s0", toks(SYSTEM), decode).previous_tokens == 0  # evicted
    assert watch.observe("s4", toks(SYSTEM), decode).matched_tokens == len(SYSTEM)


def test_memory_is_compact():
    watch = PrefixWatch()
    prompt = list(range(1000)) * 12  # a Claude Code-sized prompt
    watch.observe("s", prompt, decode=lambda ids: "")
    remembered = watch._sessions["s"]
    assert len(remembered.tokens_z) < len(prompt) * 4 and len(remembered.block_hashes) == len(prompt) // 32
