from tokenyard.conversation import Conversation, Message, Text
from tokenyard.prompting.preamble import strip_billing_preamble

HEADER = "x-anthropic-billing-header: cc_version=2.1.330.a3f; cc_entrypoint=sdk-cli;"
SYSTEM = "You are Claude Code, Anthropic's official CLI for Claude."


def conv(system=(), messages=()):
    return Conversation(model="m", system=[Text(text=t) for t in system], messages=list(messages))


def test_header_as_its_own_block():
    out, found = strip_billing_preamble(conv([HEADER, SYSTEM]))
    assert found and [b.text for b in out.system] == [SYSTEM]


def test_header_as_first_line_of_a_block():
    out, found = strip_billing_preamble(conv([HEADER + "\n" + SYSTEM]))
    assert found and [b.text for b in out.system] == [SYSTEM]


def test_absent_header_leaves_everything_alone():
    original = conv([SYSTEM, "more"])
    out, found = strip_billing_preamble(original)
    assert not found and out is original


def test_header_only_system():
    out, found = strip_billing_preamble(conv([HEADER]))
    assert found and out.system == []


def test_header_in_a_system_message():
    # Claude Code moves the system prompt into messages for models it does not know.
    messages = [
        Message(role="system", parts=[Text(text=HEADER), Text(text=SYSTEM)]),
        Message(role="user", parts=[Text(text="hi")]),
    ]
    out, found = strip_billing_preamble(conv(messages=messages))
    assert found and out.messages[0].parts == [Text(text=SYSTEM)] and out.messages[1].text() == "hi"


def test_header_mid_prompt_is_not_touched():
    text = SYSTEM + "\n" + HEADER
    out, found = strip_billing_preamble(conv([text]))
    assert not found and out.system[0].text == text


def test_two_sessions_with_different_headers_become_identical():
    a, _ = strip_billing_preamble(conv([HEADER, SYSTEM]))
    b, _ = strip_billing_preamble(conv([HEADER.replace("a3f", "9c0"), SYSTEM]))
    assert a == b
