"""Drives the stub's Message Batches API with the official anthropic SDK, as a client of
Anthropic's own would, through the create faults the stub was started with.

    anthropic_batch_client.py BASE_URL OUTDIR GROUP CREATE_FAULTS

CREATE_FAULTS is the number of failing creates the stub has in store (the last one taken
to be a lost answer). Creates a batch of three requests whose custom_ids are
GROUP-0..GROUP-2 (the second fails, the third expires, by their stub directives), then
one of another group (GROUPx), finds ours again by listing one batch a page (the SDK
follows `after_id`) and reading each batch's results' custom_ids, waits for it to end,
writes OUTDIR/batch.json and OUTDIR/results.jsonl (each result line as the SDK parsed
it), the succeeded messages as OUTDIR/message-N.json, creates and cancels a batch of
GROUP-other, and prints a JSON report.
"""
import json
import sys
import time

import anthropic


def params(text, stub=None):
    body = {"model": "messages-model", "max_tokens": 64, "messages": [{"role": "user", "content": text}]}
    if stub:
        body["stub"] = stub
    return body


def main(base_url, outdir, group, faults):
    client = anthropic.Anthropic(base_url=base_url, api_key="sk-ant-stub", max_retries=0, timeout=10)
    report = {"met": []}
    requests = [
        {"custom_id": f"{group}-0", "params": params("Hi")},
        {"custom_id": f"{group}-1", "params": params("No", {"batch_line": "fail"})},
        {"custom_id": f"{group}-2", "params": params("Late", {"batch_line": "expire"})},
    ]
    for _ in range(int(faults)):
        try:
            client.messages.batches.create(requests=requests)
            report["met"].append("create ok")
        except anthropic.APIStatusError as error:
            report["met"].append(f"create {error.status_code}")
        except anthropic.APIConnectionError:
            report["met"].append("create lost")
    # Another group's batch, newer: finding ours must page past it (after_id).
    client.messages.batches.create(requests=[{"custom_id": f"{group}x-0", "params": params("Other")}])
    try:
        # The key as a bearer token, as OpenAI takes it: Anthropic refuses it.
        anthropic.Anthropic(base_url=base_url, api_key=None, auth_token="sk-ant-stub", max_retries=0,
                            timeout=10).messages.batches.list()
        report["met"].append("bearer ok")
    except anthropic.APIStatusError as error:
        report["met"].append(f"bearer {error.status_code}")
    # Found again: list every batch, one a page, and read each ended one's custom_ids.
    listed = list(client.messages.batches.list(limit=1))
    report["listed"] = len(listed)
    deadline = time.time() + 30
    found = []
    for batch in listed:
        while batch.processing_status != "ended" and time.time() < deadline:
            time.sleep(0.2)
            batch = client.messages.batches.retrieve(batch.id)
        ids = [line.custom_id for line in client.messages.batches.results(batch.id)]
        if any(i.rsplit("-", 1)[0] == group for i in ids):
            found.append(batch)
    report["found"] = [b.id for b in found]
    batch = found[0]
    with open(f"{outdir}/batch.json", "w") as handle:
        handle.write(batch.model_dump_json())
    with open(f"{outdir}/results.jsonl", "w") as handle:
        for line in client.messages.batches.results(batch.id):
            handle.write(line.model_dump_json() + "\n")
            if line.result.type == "succeeded":
                with open(f"{outdir}/message-{line.custom_id.rsplit('-', 1)[1]}.json", "w") as message:
                    message.write(line.result.message.model_dump_json())
    other = client.messages.batches.create(requests=[{"custom_id": f"{group}-other-0", "params": params("Stop")}])
    report["cancelling"] = client.messages.batches.cancel(other.id).processing_status
    ended = client.messages.batches.retrieve(other.id)
    report["cancelled"] = [ended.processing_status, ended.request_counts.canceled]
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
