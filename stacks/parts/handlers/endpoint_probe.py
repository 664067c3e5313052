"""Custom resource: a real chat completion from a SageMaker endpoint, or the reason not.

InService means the container answers /ping; this asks it a question and requires
non-empty text, retrying until BudgetSeconds run out. Properties: EndpointName,
ModelId, BudgetSeconds. Returns Reply (the first 200 characters).
"""
import json
import time

import boto3

PROMPT = "Reply with the single word: ok"


def compute(properties, runtime=None, sleep=time.sleep, clock=time.monotonic):
    runtime = runtime or boto3.client("sagemaker-runtime")
    name = properties["EndpointName"]
    body = json.dumps({"model": properties["ModelId"], "max_tokens": 16, "temperature": 0,
                       "messages": [{"role": "user", "content": PROMPT}]})
    deadline = clock() + int(properties["BudgetSeconds"])
    last = "no attempt"
    while True:
        try:
            reply = runtime.invoke_endpoint(EndpointName=name, ContentType="application/json",
                                            Accept="application/json", Body=body)
            data = json.loads(reply["Body"].read())
            text = (((data.get("choices") or [{}])[0].get("message") or {}).get("content") or "").strip()
            if text:
                return {"Reply": text[:200]}
            last = f"200 OK with empty text: {json.dumps(data)[:300]}"
        except Exception as exc:  # any error is retried until the budget is spent
            last = f"{type(exc).__name__}: {exc}"[:500]
        if clock() >= deadline:
            raise RuntimeError(f"endpoint {name} gave no chat completion with text; last: {last}")
        sleep(15)
