"""``create_bedrock_kb_tool``: an Amazon Bedrock Knowledge Base as a tool (Mastra's createBedrockKBTool),
through boto3's ``bedrock-agent-runtime``.

Agentic retrieval first (``AgenticRetrieveStream``, present in the pinned botocore's service model:
managed foundation and reranking models decompose and rerank the query), and on any error the standard
``Retrieve``, which also returns scores. ``number_of_results`` defaults to 5; the user id comes from the
request context (``user_id`` / ``userId``) or the tool option. Credentials and region follow boto3's usual
chain (``AWS_REGION`` else ``us-east-1``); set ``USE_AGENTIC_RETRIEVAL=false`` to skip the agentic call.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pipeline.vector_tool.resolver import RequestContext
from pipeline.vector_tool.tool import Tool, check_query_text

log = logging.getLogger(__name__)

# Retrieve's location types and the field holding each one's URI.
_LOCATIONS = (
    ("s3Location", "uri"),
    ("webLocation", "url"),
    ("confluenceLocation", "url"),
    ("salesforceLocation", "url"),
    ("sharePointLocation", "url"),
    ("customDocumentLocation", "id"),
    ("kendraDocumentLocation", "uri"),
    ("oneDriveLocation", "url"),
    ("googleDriveLocation", "url"),
)
_SOURCE_KEYS = ("x-amz-bedrock-kb-source-uri", "_source_uri")
_STREAM_ERRORS = (
    "accessDeniedException",
    "badGatewayException",
    "conflictException",
    "dependencyFailedException",
    "internalServerException",
    "resourceNotFoundException",
    "serviceQuotaExceededException",
    "throttlingException",
    "validationException",
)


class BedrockStreamError(RuntimeError):
    """An error event inside the agentic retrieval stream."""


def source_uri(location: Mapping[str, Any] | None) -> str | None:
    """The URI of a Retrieve result's location: S3, web, Confluence, Salesforce, SharePoint, custom (and
    the other types the service model lists)."""
    if not location:
        return None
    for key, field in _LOCATIONS:
        value = (location.get(key) or {}).get(field)
        if value:
            return str(value)
    return None


def _events(stream: Any) -> Iterable[Mapping[str, Any]]:
    # boto3 gives an EventStream to iterate; botocore's Stubber can only stub one event (a mapping).
    return [stream] if isinstance(stream, Mapping) else stream


class BedrockKBTool(Tool):
    def __init__(
        self,
        *,
        knowledge_base_id: str,
        region: str | None = None,
        number_of_results: int = 5,
        use_agentic_retrieval: bool | None = None,
        user_id: str | None = None,
        retrieve_configuration: Literal["managed", "vector"] = "managed",
        client: Any = None,
        description: str | None = None,
    ) -> None:
        if not knowledge_base_id:
            raise ValueError("knowledge_base_id is required")
        self.knowledge_base_id = knowledge_base_id
        self.region = region or os.environ.get("AWS_REGION") or "us-east-1"
        self.number_of_results = number_of_results
        if use_agentic_retrieval is None:
            use_agentic_retrieval = os.environ.get("USE_AGENTIC_RETRIEVAL", "").lower() != "false"
        self.use_agentic_retrieval = use_agentic_retrieval
        self.user_id = user_id
        self.retrieve_configuration = retrieve_configuration
        self._client = client
        self.id = f"bedrock_knowledge_base_{knowledge_base_id}"
        self.description = description or (
            "Search the Amazon Bedrock knowledge base for passages relevant to the query."
        )
        self.input_schema = {
            "type": "object",
            "properties": {"query_text": {"type": "string", "description": "What to search for."}},
            "required": ["query_text"],
        }
        self.output_schema = {
            "type": "object",
            "properties": {
                "results": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string"},
                            "source": {"type": ["string", "null"]},
                            "score": {"type": ["number", "null"]},
                            "metadata": {"type": "object"},
                        },
                    },
                },
                "method": {"type": "string", "enum": ["agentic", "retrieve"]},
            },
        }

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("bedrock-agent-runtime", region_name=self.region)
        return self._client

    def _user_context(self, context: RequestContext) -> dict[str, Any]:
        user_id = context.get("user_id", context.get("userId")) or self.user_id
        return {"userContext": {"userId": str(user_id)}} if user_id else {}

    def agentic_retrieve(self, query_text: str, context: RequestContext) -> list[dict[str, Any]]:
        response = self.client.agentic_retrieve_stream(
            messages=[{"role": "user", "content": {"text": query_text}}],
            retrievers=[
                {
                    "configuration": {
                        "knowledgeBase": {
                            "knowledgeBaseId": self.knowledge_base_id,
                            "retrievalOverrides": {"maxNumberOfResults": self.number_of_results},
                        }
                    }
                }
            ],
            agenticRetrieveConfiguration={"foundationModelType": "MANAGED", "rerankingModelType": "MANAGED"},
            **self._user_context(context),
        )
        results = []
        for event in _events(response["stream"]):
            for name in _STREAM_ERRORS:
                if name in event:
                    raise BedrockStreamError(f"{name}: {event[name].get('message')}")
            for item in (event.get("result") or {}).get("results", []):
                metadata = dict(item.get("metadata") or {})
                source = next((metadata[k] for k in _SOURCE_KEYS if metadata.get(k)), None)
                results.append(
                    {
                        "content": (item.get("content") or {}).get("text") or "",
                        "source": str(source) if source is not None else None,
                        "score": None,  # the agentic stream carries no scores
                        "metadata": metadata,
                    }
                )
        return results

    def retrieve(self, query_text: str, context: RequestContext) -> list[dict[str, Any]]:
        key = (
            "managedSearchConfiguration"
            if self.retrieve_configuration == "managed"
            else "vectorSearchConfiguration"
        )
        response = self.client.retrieve(
            knowledgeBaseId=self.knowledge_base_id,
            retrievalQuery={"text": query_text},
            retrievalConfiguration={key: {"numberOfResults": self.number_of_results}},
            **self._user_context(context),
        )
        return [
            {
                "content": (r.get("content") or {}).get("text") or "",
                "source": source_uri(r.get("location")),
                "score": r.get("score"),
                "metadata": dict(r.get("metadata") or {}),
            }
            for r in response.get("retrievalResults", [])
        ]

    def search(self, query_text: str, context: RequestContext | None = None) -> dict[str, Any]:
        ctx = context or {}
        if self.use_agentic_retrieval:
            try:
                return {"results": self.agentic_retrieve(query_text, ctx), "method": "agentic"}
            except Exception as exc:
                log.warning(
                    "agentic retrieval failed (%s: %s); falling back to Retrieve", type(exc).__name__, exc
                )
        # Errors of the standard Retrieve are the caller's to see, as in Mastra.
        return {"results": self.retrieve(query_text, ctx), "method": "retrieve"}

    async def aexecute(
        self, input: Mapping[str, Any], context: RequestContext | None = None
    ) -> dict[str, Any]:
        query_text = check_query_text(input.get("query_text"))
        return await asyncio.to_thread(self.search, query_text, context)


def create_bedrock_kb_tool(knowledge_base_id: str, **options: Any) -> BedrockKBTool:
    """A Bedrock Knowledge Base tool; ``options`` are ``BedrockKBTool``'s (keywords only): region,
    number_of_results, use_agentic_retrieval, user_id, retrieve_configuration, description, and
    ``client``, which may be a ready ``bedrock-agent-runtime`` client."""
    return BedrockKBTool(knowledge_base_id=knowledge_base_id, **options)
