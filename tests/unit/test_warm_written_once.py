"""What the warm template builds once so that no fork builds it again (``tiller.warm.template``
``warm_up``): cattrs's functions for a connection's messages and requests' params, and what
the SDK parses a model listing into. Each check runs in a fresh interpreter: what another
test did in this process would hide what the warm-up leaves out."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run_fresh(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_after_the_warm_up_a_connection_writes_no_converter_function() -> None:
    # A connection's messages, as a forked server meets them: the client's initialize with
    # its folders, pygls's log of the capabilities and its answer, events whose params hold
    # lists, tuples and nested objects, a request to the client, an error, a prompt's params.
    written = run_fresh(
        """
        import cattrs.gen
        from lsprotocol import types as lsp
        from pygls.protocol import (
            JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage,
        )
        from tiller import protocol as p
        from tiller.faces.lsp.params import structure_params, warm_params
        from tiller.faces.lsp.rpc import HANDLERS
        from tiller.faces.common.wire import plain_dict_converter, warm_handshake

        converter = plain_dict_converter()
        warm_handshake(converter)
        warm_params(params for params, _ in HANDLERS.values())
        written = []
        for name in ("make_dict_unstructure_fn_from_attrs", "make_dict_structure_fn_from_attrs"):
            made = getattr(cattrs.gen, name)
            def counted(cls, *args, made=made, **kwargs):
                written.append(cls)
                return made(cls, *args, **kwargs)
            setattr(cattrs.gen, name, counted)

        converter.structure({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "processId": 42, "rootUri": "file:///w",
                "capabilities": {"workspace": {"workspaceFolders": True}},
                "workspaceFolders": [
                    {"uri": "file:///w", "name": "w"}, {"uri": "file:///v", "name": "v"},
                ],
            },
        }, lsp.InitializeRequest)
        capabilities = lsp.ServerCapabilities(
            execute_command_provider=lsp.ExecuteCommandOptions(commands=["tiller.a", "tiller.b"]),
        )
        result = lsp.InitializeResult(
            capabilities=capabilities, server_info=lsp.ServerInfo(name="tiller", version="1.0")
        )
        for message in (
            capabilities,
            JsonRPCResponseMessage(id=1, jsonrpc="2.0", result=result),
            JsonRPCNotification(method="tiller/event", jsonrpc="2.0", params={
                "kind": "todos", "items": [{"text": "a", "tags": ("x", "y")}], "n": 1.5,
                "none": None,
            }),
            JsonRPCRequestMessage(
                id=2, method="tiller/askApproval", jsonrpc="2.0", params={"choices": ["yes"]}
            ),
            lsp.ResponseErrorMessage(id=3, error=lsp.ResponseError(code=-32602, message="bad")),
        ):
            converter.unstructure(message)
        attachment = {"kind": "file", "name": "a.txt", "path": "a.txt"}
        structure_params(p.PromptParams, {"text": "hi", "attachments": [attachment]})
        print(len(written), written)
        """
    )
    assert written.startswith("0 "), written


def test_after_the_warm_up_a_model_listing_builds_no_model() -> None:
    rebuilt = run_fresh(
        """
        import asyncio
        import anthropic, httpx2, pydantic
        from tiller.warm.models_listing import PAGE, warm_models_listing

        warm_models_listing()
        rebuilt = []
        rebuild = pydantic.BaseModel.model_rebuild.__func__
        def counted(cls, *args, **kwargs):
            rebuilt.append(cls.__name__)
            return rebuild(cls, *args, **kwargs)
        pydantic.BaseModel.model_rebuild = classmethod(counted)

        async def listing():
            transport = httpx2.MockTransport(lambda _: httpx2.Response(200, json=PAGE))
            async with httpx2.AsyncClient(transport=transport) as http:
                client = anthropic.AsyncAnthropic(
                    api_key="k", base_url="http://api.invalid", http_client=http
                )
                page = await client.models.list(limit=100)
                return page.data[0].capabilities.thinking.types.adaptive.supported

        print(asyncio.run(listing()), rebuilt)
        """
    )
    assert rebuilt == "True []"
