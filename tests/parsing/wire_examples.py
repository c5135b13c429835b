"""REFERENCE §1 literal examples (get_weather(city="Tokyo", days=3)) per tool-call
parser, with the reasoning parser the family pairs it with."""

FB = "\uff5c"  # full-width bar in DeepSeek markers
SP = "\u2581"
NS = "]<]minimax[>["  # MiniMax M3's namespace token

TOOL_EXAMPLES: dict[str, tuple[str | None, str]] = {
    "hermes": (
        "qwen3",
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}\n</tool_call>',
    ),
    "qwen3_coder": (
        "qwen3",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nTokyo\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
    ),
    "nemotron_deci": (
        "nemotron_deci",
        '<TOOLCALL>[{"name":"get_weather","arguments":{"city":"Tokyo","days":3}}]</TOOLCALL>',
    ),
    "llama3_json": (None, '<|python_tag|>{"name":"get_weather","parameters":{"city":"Tokyo","days":3}}'),
    "mistral": ("mistral", '[TOOL_CALLS]get_weather[ARGS]{"city":"Tokyo","days":3}'),
    "phi4": (None, 'functools[{"name":"get_weather","arguments":{"city":"Tokyo","days":3}}]'),
    "jamba": (None, '<tool_calls>[{"name":"get_weather","arguments":{"city":"Tokyo","days":3}}]</tool_calls>'),
    "minimax_m1": (
        "qwen3",
        '<tool_calls>\n{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}\n</tool_calls>',
    ),
    "pythonic": (None, '[get_weather(city="Tokyo", days=3)]'),
    "harmony": (
        "gpt_oss",
        '<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Tokyo","days":3}<|call|>',
    ),
    "deepseek_v3": (
        "deepseek_v3",
        f"<{FB}tool{SP}calls{SP}begin{FB}><{FB}tool{SP}call{SP}begin{FB}>function<{FB}tool{SP}sep{FB}>get_weather\n```json\n"
        f'{{"city":"Tokyo","days":3}}\n```<{FB}tool{SP}call{SP}end{FB}><{FB}tool{SP}calls{SP}end{FB}>',
    ),
    "deepseek_v3_1": (
        "deepseek_v3_1",
        f"<{FB}tool{SP}calls{SP}begin{FB}><{FB}tool{SP}call{SP}begin{FB}>get_weather<{FB}tool{SP}sep{FB}>"
        f'{{"city":"Tokyo","days":3}}<{FB}tool{SP}call{SP}end{FB}><{FB}tool{SP}calls{SP}end{FB}>',
    ),
    "deepseek_v3_2": (
        "deepseek_v3_2",
        f'<{FB}DSML{FB}function_calls>\n<{FB}DSML{FB}invoke name="get_weather">\n'
        f'<{FB}DSML{FB}parameter name="city" string="true">Tokyo</{FB}DSML{FB}parameter>\n'
        f'<{FB}DSML{FB}parameter name="days" string="false">3</{FB}DSML{FB}parameter>\n'
        f"</{FB}DSML{FB}invoke>\n</{FB}DSML{FB}function_calls>",
    ),
    "deepseek_v4": (
        "deepseek_v4",
        f'<{FB}DSML{FB}tool_calls>\n<{FB}DSML{FB}invoke name="get_weather">\n'
        f'<{FB}DSML{FB}parameter name="city" string="true">Tokyo</{FB}DSML{FB}parameter>\n'
        f'<{FB}DSML{FB}parameter name="days" string="false">3</{FB}DSML{FB}parameter>\n'
        f"</{FB}DSML{FB}invoke>\n</{FB}DSML{FB}tool_calls>",
    ),
    "apertus": (
        "apertus",
        '<|tools_prefix|>[{"get_weather": {"city": "Tokyo", "days": 3}}]<|tools_suffix|>',
    ),
    "cohere_command4": (
        "cohere_command",
        '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Tokyo", "days": 3}}\n]<|END_ACTION|>',
    ),
    "deepseek_v41": (
        "deepseek_v41",
        f'<{FB}DSML{FB} calls>\n<{FB}DSML{FB} invoke name="get_weather">\n'
        f'<{FB}DSML{FB} parameter name="city" string="true">Tokyo</{FB}DSML{FB} parameter>\n'
        f'<{FB}DSML{FB} parameter name="days" string="false">3</{FB}DSML{FB} parameter>\n'
        f"</{FB}DSML{FB} invoke>\n</{FB}DSML{FB} calls>",
    ),
    "dots": (
        None,
        '<dots_function_call>\n<invoke name="get_weather">\n<parameter name="city">Tokyo</parameter>\n'
        '<parameter name="days">3</parameter>\n</invoke>\n</dots_function_call>',
    ),
    "ernie45": (
        "ernie45",
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}\n</tool_call>\n',
    ),
    "functiongemma": (
        None,
        "<start_function_call>call:get_weather{city:<escape>Tokyo<escape>,days:3}<end_function_call>",
    ),
    "gigachat3": (
        None,
        'function call<|role_sep|>\n{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}',
    ),
    "gigachat35": (
        None,
        f'<{FB}GCML{FB}tool_calls>\n<{FB}GCML{FB}invoke name="get_weather">\n'
        f'<{FB}GCML{FB}parameter name="city" string="true">Tokyo</{FB}GCML{FB}parameter>\n'
        f'<{FB}GCML{FB}parameter name="days" string="false">3</{FB}GCML{FB}parameter>\n'
        f"</{FB}GCML{FB}invoke>\n</{FB}GCML{FB}tool_calls>",
    ),
    "granite": (None, '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}]'),
    "granite_20b_fc": (None, '<function_call> {"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}'),
    "hunyuan_a13b": (
        "hunyuan_a13b",
        '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}]</tool_calls>',
    ),
    "hy_v3": (
        "hy_v3",
        "<tool_calls:opensource>\n<tool_call:opensource>get_weather<tool_sep:opensource>\n"
        "<arg_key:opensource>city</arg_key:opensource>\n<arg_value:opensource>Tokyo</arg_value:opensource>\n"
        "<arg_key:opensource>days</arg_key:opensource>\n<arg_value:opensource>3</arg_value:opensource>\n"
        "</tool_call:opensource>\n</tool_calls:opensource>",
    ),
    "hy_v4": (
        "hy_v3",
        "<tool_calls:opensource><tool_call:opensource>get_weather"
        "<arg_key:opensource>city</arg_key:opensource><arg_value:opensource>Tokyo</arg_value:opensource>"
        "<arg_key:opensource>days</arg_key:opensource><arg_value:opensource>3</arg_value:opensource>"
        "</tool_call:opensource></tool_calls:opensource>",
    ),
    "internlm": (
        "qwen3",
        '<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": {"city": "Tokyo", "days": 3}}<|action_end|>',
    ),
    "k2_horizon": (
        "k2_horizon",
        "<ifm|tool_calls><ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key><ifm|arg_type>string</ifm|arg_type>"
        "<ifm|arg_value>Tokyo</ifm|arg_value><ifm|arg_key>days</ifm|arg_key><ifm|arg_type>integer</ifm|arg_type>"
        "<ifm|arg_value>3</ifm|arg_value></ifm|tool_call></ifm|tool_calls>",
    ),
    "kimi_k2": (
        "kimi_k25",
        '<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city":"Tokyo","days":3}<|tool_call_end|><|tool_calls_section_end|>',
    ),
    "glm45": (
        "glm45",
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Tokyo</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>",
    ),
    "glm47": (
        "glm45",
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Tokyo</arg_value><arg_key>days</arg_key><arg_value>3</arg_value></tool_call>",
    ),
    "minimax_m2": (
        "minimax_m2",
        '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Tokyo</parameter>\n<parameter name="days">3</parameter>\n</invoke>\n</minimax:tool_call>',
    ),
    "gemma4": ("gemma4", '<|tool_call>call:get_weather{city:<|"|>Tokyo<|"|>,days:3}<tool_call|>'),
    "kimi_k3": (
        "kimi_k3",
        '<|close|>think<|sep|><|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|>'
        '<|open|>argument key="city" type="string"<|sep|>Tokyo<|close|>argument<|sep|>'
        '<|open|>argument key="days" type="number"<|sep|>3<|close|>argument<|sep|>'
        "<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>",
    ),
    "lfm2": ("qwen3", "<|tool_call_start|>[get_weather(city='Tokyo', days=3)]<|tool_call_end|>"),
    "ling3": (
        "ling3",
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Tokyo</arg_value>"
        "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>",
    ),
    "longcat": (
        None,
        '<longcat_tool_call>\n{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}\n</longcat_tool_call>',
    ),
    "mimo": (
        "mimo",
        "<tool_call>\n<function=get_weather>\n<parameter=city>Tokyo</parameter>\n<parameter=days>3</parameter>\n</function>\n</tool_call>",
    ),
    "minicpm5": (
        "qwen3",
        '<function name="get_weather"><param name="city">Tokyo</param><param name="days">3</param></function>',
    ),
    "muse_glimmer": (
        "muse_glimmer",
        ' to=get_weather<|message|><atem:function_calls>\n<atem:invoke name="get_weather">\n'
        '<atem:parameter name="city">Tokyo</atem:parameter>\n<atem:parameter name="days">3</atem:parameter>\n'
        "</atem:invoke>\n</atem:function_calls><|eom|>",
    ),
    "olmo3": ("olmo3", '<function_calls>\nget_weather(city="Tokyo", days=3)\n</function_calls>'),
    "plamo3": (
        "plamo3",
        "<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>"
        "<|plamo:begin_tool_name:plamo|>get_weather<|plamo:end_tool_name:plamo|>"
        "<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>"
        '{"city": "Tokyo", "days": 3}'
        "<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|><|plamo:end_tool_requests:plamo|>",
    ),
    "poolside_v1": (
        "qwen3",
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Tokyo</arg_value>"
        "<arg_key>days</arg_key><arg_value>3</arg_value></tool_call>",
    ),
    "seed_oss": (
        "seed_oss",
        "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Tokyo</parameter>\n<parameter=days>3</parameter>\n</function>\n</seed:tool_call>",
    ),
    "spark25": (
        "spark25",
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Tokyo</arg_value>"
        "<arg_key>days</arg_key><arg_value>3</arg_value></tool_call>",
    ),
    "step3": (
        "step3",
        f"<{FB}tool_calls_begin{FB}><{FB}tool_call_begin{FB}>function<{FB}tool_sep{FB}>"
        '<steptml:invoke name="get_weather"><steptml:parameter name="city">Tokyo</steptml:parameter>'
        '<steptml:parameter name="days">3</steptml:parameter></steptml:invoke>'
        f"<{FB}tool_call_end{FB}><{FB}tool_calls_end{FB}>",
    ),
    "step3p5": (
        "step3p5",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nTokyo\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
    ),
    "granite4": (
        None,
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}\n</tool_call>',
    ),
    "inkling": (
        "inkling",
        '<|content_invoke_tool_json|>{"name": "get_weather", "args": {"city": "Tokyo", "days": 3}}<|end_message|>',
    ),
    "minimax_m3": (
        "minimax_m3",
        f'{NS}<tool_call>\n{NS}<invoke name="get_weather">{NS}<city>Tokyo{NS}</city>{NS}<days>3{NS}</days>{NS}</invoke>\n{NS}</tool_call>',
    ),
    "solar_open2": (
        "solar_open2",
        "<|tool_call:start|>get_weather\n<|tool_arg:start|>city<|tool_arg:value|>Tokyo<|tool_arg:end|>\n"
        "<|tool_arg:start|>days<|tool_arg:value|>3<|tool_arg:end|>\n<|tool_call:end|>",
    ),
    "xlam": (None, '[{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}]'),
    "generic_json": (None, '{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}'),
    "solar_open": (
        "solar_open",
        "<|begin|>assistant<|tool_calls|><|tool_call:begin|>a1b2c3d4e5<|tool_call:name|>get_weather"
        '<|tool_call:args|>{"city":"Tokyo","days":3}<|tool_call:end|><|calls|>',
    ),
    "apriel": (
        "apriel",
        '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}, "id": "a1b2c3"}]</tool_calls>',
    ),
    "firefunction_v2": (None, ' functools[{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}]'),
    "cohere_command_r": (
        None,
        'Action:\n```json\n[\n    {\n        "tool_name": "get_weather",\n        "parameters": {"city": "Tokyo", "days": 3}\n    }\n]```',
    ),
    "functionary_v3_1": (None, '<function=get_weather>{"city": "Tokyo", "days": 3}</function>'),
    "functionary_v3_2": (None, 'get_weather\n{"city": "Tokyo", "days": 3}'),
}
