# --- appended to every handler: answer CloudFormation, never leave it waiting ---
import json as _json
import urllib.request as _request


def handler(event, context):
    data, status, reason = {}, "SUCCESS", "OK"
    try:
        if event["RequestType"] != "Delete":
            data = compute(event["ResourceProperties"])  # noqa: F821 (defined by the handler module)
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
