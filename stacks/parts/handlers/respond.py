# --- appended to every handler: answer CloudFormation, never leave it waiting ---
import json as _json
import urllib.request as _request


def handler(event, context):
    data, status, reason = {}, "SUCCESS", "OK"
    properties, code = event["ResourceProperties"], compute.__code__  # noqa: F821 (the handler module's)
    try:
        if event["RequestType"] != "Delete":  # compute() may take the Lambda context, for its remaining time
            data = compute(properties, **({"context": context} if "context" in code.co_varnames[:code.co_argcount]
                                          else {}))  # noqa: F821
        elif "on_delete" in globals():  # a handler with something to stop when its stack is deleted
            on_delete(properties)  # noqa: F821
    except Exception as exc:  # every failure goes back to CloudFormation with its reason
        status, reason = "FAILED", f"{type(exc).__name__}: {exc}"[:3000]
    body = _json.dumps({
        "Status": status, "Reason": reason, "Data": data,
        "PhysicalResourceId": event.get("PhysicalResourceId") or event["LogicalResourceId"],
        "StackId": event["StackId"], "RequestId": event["RequestId"],
        "LogicalResourceId": event["LogicalResourceId"],
    }).encode()
    request = _request.Request(event["ResponseURL"], data=body, method="PUT", headers={"Content-Type": ""})
    _request.urlopen(request, timeout=30)  # noqa: S310 (the pre-signed CloudFormation URL)
    return status
