"""Ready ``sampling=`` handlers over the providers' official SDKs.

    from mcpkit.client import Client
    from mcpkit.client.sampling import AnthropicSampler

    sampler = AnthropicSampler(default_model="claude-sonnet-4-5")
    async with Client(target, sampling=sampler, sampling_tools=True) as client: ...

Each sampler turns a ``sampling/createMessage`` request into one call of the provider's
API (model chosen from the server's hints, system prompt, messages with images, tools in
sampling, stop sequences) and its answer into the ``CreateMessageResult`` (content, model,
stop reason); a provider's failure reaches the server as a JSON-RPC error it can act on.
The SDKs are the ``mcpkit[anthropic]`` and ``mcpkit[openai]`` extras, imported only when
a sampler first asks its provider.

| module | job |
|---|---|
| ``common`` | ``Sampler``: the model choice, the token ceiling; MCP content, errors |
| ``anthropic`` | ``AnthropicSampler``: Anthropic's Messages API |
| ``openai`` | ``OpenAISampler``: OpenAI's Chat Completions API |
"""

from .anthropic import AnthropicSampler
from .common import Sampler
from .openai import OpenAISampler

__all__ = ["AnthropicSampler", "OpenAISampler", "Sampler"]
