"""Drives the stub's Files and Batches API with the official openai SDK, as a client of
OpenAI's own would, through the faults the stub was started with.

    batch_client.py BASE_URL INPUT.jsonl OUTDIR GROUP FAULTS

FAULTS is the number of failing uploads and failing creates the stub has in store, as
"U,C" (the last create fault is taken to be a lost answer). Writes OUTDIR/output.jsonl,
OUTDIR/errors.jsonl (when the batch has one) and OUTDIR/batch.json, and prints a JSON
report: what each call met, and the batch found again by its metadata.
"""
import json
import sys
import time

import openai


def main(base_url, input_path, outdir, group, faults):
    uploads, creates = (int(n) for n in faults.split(","))
    client = openai.OpenAI(base_url=base_url, api_key="sk-stub", max_retries=0, timeout=10)
    report = {"met": []}
    for _ in range(uploads):
        try:
            client.files.create(file=open(input_path, "rb"), purpose="batch")
            report["met"].append("upload ok")
        except openai.APIStatusError as error:
            report["met"].append(f"upload {error.status_code}")
    uploaded = client.files.create(file=open(input_path, "rb"), purpose="batch")
    report["file"] = client.files.retrieve(uploaded.id).model_dump()
    for index in range(creates):
        try:
            client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                  completion_window="24h", metadata={"llmspool_group": group})
            report["met"].append("create ok")
        except openai.APIStatusError as error:
            report["met"].append(f"create {error.status_code}")
        except openai.APIConnectionError:
            report["met"].append("create lost")
    # Found again by its metadata, paging one batch at a time (the SDK follows `after`).
    found = [b for b in client.batches.list(limit=1) if (b.metadata or {}).get("llmspool_group") == group]
    report["found"] = [b.id for b in found]
    batch = found[0]
    deadline = time.time() + 30
    while batch.status not in ("completed", "failed", "expired", "cancelled") and time.time() < deadline:
        time.sleep(0.2)
        batch = client.batches.retrieve(batch.id)
    with open(f"{outdir}/batch.json", "w") as handle:
        handle.write(batch.model_dump_json())
    if batch.output_file_id:
        client.files.content(batch.output_file_id).write_to_file(f"{outdir}/output.jsonl")
    if batch.error_file_id:
        client.files.content(batch.error_file_id).write_to_file(f"{outdir}/errors.jsonl")
    other = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                  completion_window="24h", metadata={"llmspool_group": group + "-other"})
    report["cancelled"] = client.batches.cancel(other.id).status
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
