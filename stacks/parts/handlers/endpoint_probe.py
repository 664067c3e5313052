"""Custom resource: a real chat completion from a SageMaker endpoint, or the reason not.

InService means the container answers /ping; this asks it a question and requires
non-empty text, retrying until BudgetSeconds run out. Properties: EndpointName,
ModelId, BudgetSeconds. Returns Reply (the first 200 characters).

Each request is one attempt with short timeouts (SageMaker gives a container 60 s to
answer), and no attempt starts unless it and the answer to CloudFormation fit in the
function's remaining time: a slow endpoint fails the deploy with its reason instead of
the function timing out without answering.
"""
import json
import time

import boto3
from botocore.config import Config

PROMPT = "Reply with the single word: ok"
CONNECT_S, READ_S = 5, 70
ATTEMPT_S = CONNECT_S + READ_S + 5  # the longest one request can take, with a margin
ANSWER_S = 35  # respond.py's upload of the answer (30 s timeout), with a margin
PAUSE_S = 15
CONFIG = Config(connect_timeout=CONNECT_S, read_timeout=READ_S, retries={"total_max_attempts": 1, "mode": "standard"})


def compute(properties, runtime=None, sleep=time.sleep, clock=time.monotonic, context=None):
    runtime = runtime or boto3.client("sagemaker-runtime", config=CONFIG)
    name = properties["EndpointName"]
    body = json.dumps({"model": properties["ModelId"], "max_tokens": 16, "temperature": 0,
                       "messages": [{"role": "user", "content": PROMPT}]})
    budget = int(properties["BudgetSeconds"])
    if context is not None:
        budget = min(budget, context.get_remaining_time_in_millis() / 1000 - ATTEMPT_S - ANSWER_S)
    deadline = clock() + budget
    last = "no attempt: no time left for one"
    while clock() <= deadline:
        try:
            reply = runtime.invoke_endpoint(EndpointName=name, ContentType="application/json",
                                            Accept="application/json", Body=body)
            data = json.loads(reply["Body"].read())
            text = (((data.get("choices") or [{}])[0].get("message") or {}).get("content") or "").strip()
            if text:
                return {"Reply": text[:200]}
            last = f"200 OK with empty text: {json.dumps(data)[:300]}"
        except Exception as exc:  # any error is retried while there is time
            last = f"{type(exc).__name__}: {exc}"[:500]
        if clock() + PAUSE_S > deadline:
            break
        sleep(PAUSE_S)
    raise RuntimeError(f"endpoint {name} gave no chat completion with text in {budget:.0f} s; last: {last}")
