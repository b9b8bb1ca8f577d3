"""The deployment tests' GraphQL client and waits: the same queries against the webserver of
processes on the host (test_deploy) and of the compose stack (test_compose)."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

REPOSITORY = {"repositoryName": "__repository__", "repositoryLocationName": "chronoscope"}
BACKFILL_DONE = ("COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED")
RUN_DONE = ("SUCCESS", "FAILURE", "CANCELED")
EVALUATION_ASSETS = ("predictions", "metrics", "paraphrase_predictions", "paraphrase_metrics")

RUNS_QUERY = """query Runs($filter: RunsFilter) {
    runsOrError(filter: $filter) { ... on Runs { results {
        runId status jobName tags { key value } } } } }"""
LAUNCH_BACKFILL = """mutation Backfill($params: LaunchBackfillParams!) {
    launchPartitionBackfill(backfillParams: $params) {
        __typename ... on LaunchBackfillSuccess { backfillId }
        ... on PythonError { message } } }"""
BACKFILL_QUERY = """query Backfill($id: String!) { partitionBackfillOrError(backfillId: $id) {
    ... on PartitionBackfill { status } } }"""
FAILED_RUNS = """query Failed($filter: RunsFilter) {
    runsOrError(filter: $filter, limit: 10) { ... on Runs { results {
        runId jobName tags { key value }
        eventConnection { events { __typename
            ... on ExecutionStepFailureEvent { stepKey error { message stack } }
            ... on RunFailureEvent { message } } } } } } }"""
MATERIALIZATIONS = """query Events($path: [String!]!, $keys: [String!]) {
    assetOrError(assetKey: {path: $path}) { ... on Asset {
        assetMaterializations(partitions: $keys) { partition runId timestamp
            metadataEntries { label
                ... on IntMetadataEntry { intValue }
                ... on JsonMetadataEntry { jsonString } } } } } }"""


def graphql(url: str, query: str, **variables: Any) -> dict[str, Any]:
    """The ``data`` of a query to the webserver at ``url``; GraphQL errors fail the test."""
    request = urllib.request.Request(
        f"{url}/graphql",
        data=json.dumps({"query": query, "variables": variables}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        body = json.loads(response.read())
    assert "errors" not in body, body["errors"]
    return body["data"]


def wait_for(
    condition: Callable[[], T | None],
    timeout_s: float,
    what: str,
    logs: Callable[[], str] | None = None,
    poll_s: float = 1.0,
) -> T:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if result := condition():
            return result
        time.sleep(poll_s)
    raise AssertionError(
        f"timed out after {timeout_s:.0f} s waiting for {what}\n{logs() if logs else ''}"
    )


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def model_runs(url: str, model: str) -> list[dict[str, Any]]:
    """Every run of a ``model`` partition (evaluation and probe runs)."""
    runs = graphql(url, RUNS_QUERY)["runsOrError"]["results"]
    return [
        r for r in runs
        if {"key": "dagster/partition/model", "value": model} in r["tags"]
        or {"key": "dagster/partition", "value": model} in r["tags"]
    ]  # fmt: skip


def failed_runs(url: str) -> str:
    """Why the newest failed runs failed (their step and run failures, with the error), to
    lead a failing test's message: the services' logs after it are cut to their ends."""
    try:
        runs = graphql(url, FAILED_RUNS, filter={"statuses": ["FAILURE"]})["runsOrError"]
    except (OSError, AssertionError) as error:
        return f"(the failed runs could not be read: {error})\n"
    lines = []
    for run in runs.get("results", []):
        tags = {tag["key"]: tag["value"] for tag in run["tags"]}
        lines.append(
            f"=== failed run {run['runId']} ({run['jobName']}, "
            f"partition {tags.get('dagster/partition', '-')})"
        )
        for event in run["eventConnection"]["events"]:
            if event["__typename"] == "ExecutionStepFailureEvent":
                error = event["error"] or {}
                stack = "".join(error.get("stack") or [])[-2000:]
                lines.append(f"step {event['stepKey']}: {error.get('message', '')}{stack}")
            elif event["__typename"] == "RunFailureEvent":
                lines.append(f"run: {event['message']}")
    return "\n".join(lines) + "\n" if lines else ""


def launch_backfill(
    url: str, assets: tuple[str, ...] | list[str], keys: list[str] | None, title: str
) -> str:
    """A backfill of ``assets``: the partitions ``keys``, or (None) every partition of each,
    unpartitioned assets included, in dependency order."""
    partitions = {"partitionNames": keys} if keys is not None else {"allPartitions": True}
    launched = graphql(
        url,
        LAUNCH_BACKFILL,
        params={
            "assetSelection": [{"path": [name]} for name in assets],
            **partitions,
            "title": title,
        },
    )["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    return launched["backfillId"]


def backfill_done(url: str, backfill_id: str) -> str | None:
    status = graphql(url, BACKFILL_QUERY, id=backfill_id)["partitionBackfillOrError"]["status"]
    return status if status in BACKFILL_DONE else None


def materializations(url: str, asset: str, keys: list[str] | None = None) -> list[dict[str, Any]]:
    """The materializations of ``asset`` (of the partitions ``keys``), metadata as a dict."""
    events = graphql(url, MATERIALIZATIONS, path=[asset], keys=keys)["assetOrError"][
        "assetMaterializations"
    ]
    for event in events:
        event["metadata"] = {
            entry["label"]: entry.get("intValue", entry.get("jsonString"))
            for entry in event.pop("metadataEntries")
        }
    return events


STALENESS = """query Stale($path: [String!]!, $partitions: [String!]!) {
    assetNodes(assetKeys: [{path: $path}]) {
        staleStatusByPartition(partitions: $partitions)
        staleCausesByPartition(partitions: $partitions) { key { path } reason } } }"""
LAUNCH = """mutation Launch($params: ExecutionParams!) { launchRun(executionParams: $params) {
    __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }"""
RUN_STATUS = """query Run($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }"""


def staleness(url: str, asset: str, partitions: list[str]) -> dict[str, tuple[str, list[str]]]:
    """What the webserver says of each partition: its stale status and root causes."""
    [node] = graphql(url, STALENESS, path=[asset], partitions=partitions)["assetNodes"]
    return {
        partition: (status, [f"{c['key']['path'][-1]} {c['reason']}" for c in causes])
        for partition, status, causes in zip(
            partitions, node["staleStatusByPartition"], node["staleCausesByPartition"], strict=True
        )
    }


def run_assets(
    url: str, assets: list[str], partition: str | None = None, timeout: float = 300
) -> str:
    """Launch a run of ``assets`` (observing the sources among them) through the webserver,
    as the UI's buttons do, and wait for it; its final status."""
    tags = [{"key": "dagster/partition", "value": partition}] if partition else []
    launched = graphql(
        url,
        LAUNCH,
        params={
            "selector": {
                **REPOSITORY,
                "jobName": "__ASSET_JOB",
                "assetSelection": [{"path": [asset]} for asset in assets],
            },
            "executionMetadata": {"tags": tags},
        },
    )["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]

    def done() -> str | None:
        status = graphql(url, RUN_STATUS, id=run_id)["runOrError"]["status"]
        return status if status in RUN_DONE else None

    return wait_for(done, timeout, f"the run of {', '.join(assets)}")
