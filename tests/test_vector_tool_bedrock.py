"""The Bedrock knowledge-base tool against botocore's Stubber: AWS is unreachable here, so every AWS
answer in these tests is FAKE (stubbed), checked by the Stubber against botocore's real service model
for bedrock-agent-runtime (request parameters and response shapes)."""

from __future__ import annotations

import logging

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from pipeline.vector_tool import create_bedrock_kb_tool
from pipeline.vector_tool.bedrock import source_uri

KB = "KB12345678"


@pytest.fixture
def client(monkeypatch):
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # never probe for instance credentials
    client = boto3.client(
        "bedrock-agent-runtime",
        region_name="us-west-2",
        aws_access_key_id="fake",
        aws_secret_access_key="fake",
    )
    with Stubber(client) as stubber:
        client.stubber = stubber
        yield client
        stubber.assert_no_pending_responses()


def agentic_params(query, n=5, user=None):
    params = {
        "messages": [{"role": "user", "content": {"text": query}}],
        "retrievers": [
            {
                "configuration": {
                    "knowledgeBase": {"knowledgeBaseId": KB, "retrievalOverrides": {"maxNumberOfResults": n}}
                }
            }
        ],
        "agenticRetrieveConfiguration": {"foundationModelType": "MANAGED", "rerankingModelType": "MANAGED"},
    }
    if user:
        params["userContext"] = {"userId": user}
    return params


def retrieve_params(query, n=5, user=None):
    params = {
        "knowledgeBaseId": KB,
        "retrievalQuery": {"text": query},
        "retrievalConfiguration": {"managedSearchConfiguration": {"numberOfResults": n}},
    }
    if user:
        params["userContext"] = {"userId": user}
    return params


def test_fake_aws_agentic_retrieval_success(client):
    event = {
        "result": {
            "results": [
                {
                    "content": {"mimeType": "text/plain", "text": "Refunds are paid within 30 days."},
                    "metadata": {"x-amz-bedrock-kb-source-uri": "s3://policies/refunds.pdf", "page": 2},
                    "sourceRetriever": {"identifier": KB},
                }
            ]
        }
    }
    client.stubber.add_response(
        "agentic_retrieve_stream", {"stream": event}, agentic_params("refund policy?", user="u-42")
    )
    tool = create_bedrock_kb_tool(KB, client=client, use_agentic_retrieval=True)
    out = tool.execute({"query_text": "refund policy?"}, {"user_id": "u-42"})
    assert out["method"] == "agentic"
    assert out["results"] == [
        {
            "content": "Refunds are paid within 30 days.",
            "source": "s3://policies/refunds.pdf",
            "score": None,
            "metadata": {"x-amz-bedrock-kb-source-uri": "s3://policies/refunds.pdf", "page": 2},
        }
    ]
    assert tool.id == f"bedrock_knowledge_base_{KB}" and tool.openai_tool()["function"]["name"] == tool.id


def test_fake_aws_agentic_failure_falls_back_to_retrieve(client, caplog):
    client.stubber.add_client_error(
        "agentic_retrieve_stream", service_error_code="AccessDeniedException", http_status_code=403
    )
    client.stubber.add_response(
        "retrieve",
        {
            "retrievalResults": [
                {
                    "content": {"text": "Opening hours are 9 to 5."},
                    "location": {"type": "WEB", "webLocation": {"url": "http://127.0.0.1:9/web/hours"}},
                    "score": 0.82,
                    "metadata": {"lang": "en"},
                }
            ]
        },
        retrieve_params("opening hours", n=3, user="default-user"),
    )
    tool = create_bedrock_kb_tool(KB, client=client, number_of_results=3, user_id="default-user")
    with caplog.at_level(logging.WARNING):
        out = tool.execute({"query_text": "opening hours"})
    assert out["method"] == "retrieve"
    assert out["results"] == [
        {
            "content": "Opening hours are 9 to 5.",
            "source": "http://127.0.0.1:9/web/hours",
            "score": 0.82,
            "metadata": {"lang": "en"},
        }
    ]
    assert "falling back to Retrieve" in caplog.text


def test_fake_aws_error_event_in_the_stream_falls_back(client):
    client.stubber.add_response(
        "agentic_retrieve_stream",
        {"stream": {"throttlingException": {"message": "slow down"}}},
        agentic_params("q"),
    )
    client.stubber.add_response("retrieve", {"retrievalResults": []}, retrieve_params("q"))
    out = create_bedrock_kb_tool(KB, client=client).execute({"query_text": "q"})
    assert out == {"results": [], "method": "retrieve"}


def test_fake_aws_agentic_disabled_by_env_goes_straight_to_retrieve(client, monkeypatch):
    monkeypatch.setenv("USE_AGENTIC_RETRIEVAL", "false")
    client.stubber.add_response("retrieve", {"retrievalResults": []}, retrieve_params("q"))
    assert create_bedrock_kb_tool(KB, client=client).execute({"query_text": "q"})["method"] == "retrieve"


def test_fake_aws_retrieve_errors_reach_the_caller(client):
    client.stubber.add_client_error("agentic_retrieve_stream", service_error_code="ValidationException")
    client.stubber.add_client_error(
        "retrieve", service_error_code="ResourceNotFoundException", http_status_code=404
    )
    with pytest.raises(ClientError, match="ResourceNotFoundException"):
        create_bedrock_kb_tool(KB, client=client).execute({"query_text": "q"})


@pytest.mark.parametrize(
    ("location", "uri"),
    [
        ({"type": "S3", "s3Location": {"uri": "s3://b/k.pdf"}}, "s3://b/k.pdf"),
        ({"type": "WEB", "webLocation": {"url": "http://127.0.0.1:9/web/w"}}, "http://127.0.0.1:9/web/w"),
        (
            {"type": "CONFLUENCE", "confluenceLocation": {"url": "http://127.0.0.1:9/confluence/p"}},
            "http://127.0.0.1:9/confluence/p",
        ),
        (
            {"type": "SALESFORCE", "salesforceLocation": {"url": "http://127.0.0.1:9/salesforce/r"}},
            "http://127.0.0.1:9/salesforce/r",
        ),
        (
            {"type": "SHAREPOINT", "sharePointLocation": {"url": "http://127.0.0.1:9/sharepoint/d"}},
            "http://127.0.0.1:9/sharepoint/d",
        ),
        ({"type": "CUSTOM", "customDocumentLocation": {"id": "doc-7"}}, "doc-7"),
        ({"type": "S3"}, None),
        (None, None),
    ],
)
def test_source_uri_extraction(location, uri):
    assert source_uri(location) == uri


def test_fake_aws_retrieve_source_uris_for_every_location_type(client, monkeypatch):
    monkeypatch.setenv("USE_AGENTIC_RETRIEVAL", "false")
    locations = [
        {"type": "S3", "s3Location": {"uri": "s3://b/a"}},
        {"type": "CONFLUENCE", "confluenceLocation": {"url": "http://127.0.0.1:9/confluence/1"}},
        {"type": "SALESFORCE", "salesforceLocation": {"url": "http://127.0.0.1:9/salesforce/1"}},
        {"type": "SHAREPOINT", "sharePointLocation": {"url": "http://127.0.0.1:9/sharepoint/1"}},
        {"type": "CUSTOM", "customDocumentLocation": {"id": "custom-1"}},
    ]
    results = [
        {"content": {"text": f"r{i}"}, "location": loc, "score": 0.5} for i, loc in enumerate(locations)
    ]
    client.stubber.add_response("retrieve", {"retrievalResults": results}, retrieve_params("q"))
    out = create_bedrock_kb_tool(KB, client=client).execute({"query_text": "q"})
    assert [r["source"] for r in out["results"]] == [
        "s3://b/a",
        "http://127.0.0.1:9/confluence/1",
        "http://127.0.0.1:9/salesforce/1",
        "http://127.0.0.1:9/sharepoint/1",
        "custom-1",
    ]
