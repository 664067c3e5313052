"""A small Python Lambda whose code is inlined into the template, for custom resources."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Sequence, cast

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

import rigs

from .checks import skip_checkov

HANDLER_DIR = Path(__file__).with_name("handlers")
SHARED_DIR = Path(rigs.__file__).parent
SHARED_IMPORT = re.compile(r"^from rigs\.([\w.]+) import [\w, ]+$", re.MULTILINE)
"""A handler's import of a pure module of ``rigs/``, replaced by the module's code when inlined."""
INLINE_LIMIT = 8192
"""Our bound on one handler with respond.py, to keep each a small single job. Not AWS's: CloudFormation
dropped its 4096-character limit on ``Code.ZipFile`` in 2022 (its documentation of
AWS::Lambda::Function Code now says only that the zip it makes cannot exceed 4 MB; cfn-lint followed in
aws-cloudformation/cfn-lint#2443, CDK's documentation in aws/aws-cdk#30773)."""
RUNTIME = lambda_.Runtime.PYTHON_3_14


def inline_source(handler: str) -> str:
    """The handler module followed by ``respond.py``: one self-contained inline file.

    A handler may share a pure function with ``rigs/`` (the doctor makes the same choice): its
    ``from rigs.<module> import ...`` line is replaced by that module's code (:func:`shared_code`).
    """
    source = (HANDLER_DIR / f"{handler}.py").read_text(encoding="utf-8")
    source = SHARED_IMPORT.sub(lambda match: shared_code(match.group(1)), source)
    source += "\n\n" + (HANDLER_DIR / "respond.py").read_text(encoding="utf-8")
    if len(source) > INLINE_LIMIT:
        raise ValueError(f"handler {handler}: {len(source)} characters, over the handlers' bound of {INLINE_LIMIT}")
    return source


def shared_code(module: str) -> str:
    """``rigs/<module>.py`` without its docstring, for a handler's inline file.

    Raises ValueError when the module imports anything outside the standard library, or from
    ``__future__`` (which must open a file): the Lambda has neither ``rigs`` nor the project's
    packages, and the code lands in the middle of the handler.
    """
    path = SHARED_DIR.joinpath(*module.split(".")).with_suffix(".py")
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    for node in ast.walk(tree):
        names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        foreign = [name for name in names if name == "__future__" or name.split(".")[0] not in sys.stdlib_module_names]
        if foreign or getattr(node, "level", 0):
            raise ValueError(f"rigs/{module.replace('.', '/')}.py imports {', '.join(foreign) or 'a relative module'}: a handler can "
                             "inline only code that needs the standard library alone")
    body = tree.body[1:] if tree.body and isinstance(tree.body[0], ast.Expr) and \
        isinstance(tree.body[0].value, ast.Constant) and isinstance(tree.body[0].value.value, str) else tree.body
    first = body[0].lineno if body else len(source.splitlines()) + 1
    return f"# rigs/{module.replace('.', '/')}.py\n" + "\n".join(source.splitlines()[first - 1:]).strip("\n") + "\n"


class InlineFunction(Construct):
    """A Lambda running ``handlers/<handler>.py`` inline, with only the permissions given.

    Props:
        handler: module name under ``stacks/parts/handlers``.
        statements: what the function may do besides writing its own log.
        timeout: the function timeout (CloudFormation waits up to this for an answer).
        description: what the function is for.

    Attributes:
        function: the Lambda function (its ARN is a custom resource's service token).

    Secure defaults: a role with an inline policy only (no managed policy), a log group
    with two weeks' retention that is deleted with the stack, no VPC, no public URL.
    """

    def __init__(self, scope: Construct, id_: str, *, handler: str, statements: Sequence[iam.PolicyStatement],
                 timeout: cdk.Duration, description: str) -> None:
        super().__init__(scope, id_)
        log_group = logs.LogGroup(self, "Log", retention=logs.RetentionDays.TWO_WEEKS,
                                  removal_policy=cdk.RemovalPolicy.DESTROY)
        writes_log = iam.PolicyStatement(actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                                         resources=[log_group.log_group_arn])
        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=description,
            inline_policies={"Handler": iam.PolicyDocument(statements=[writes_log, *statements])},
        )
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            handler="index.handler",
            code=lambda_.Code.from_inline(inline_source(handler)),
            timeout=timeout,
            memory_size=256,
            role=role,
            log_group=log_group,
            description=description,
        )
        # The role's only policy is inline, so the GetAtt of its ARN already orders the
        # function after it; the DependsOn that Function adds is redundant (cfn-lint W3005).
        cast(cdk.CfnResource, self.function.node.default_child).add_deletion_override("DependsOn")

        skip_checkov(log_group, "CKV_AWS_158",
                     "A custom-resource handler's log (its deploy-time answers and errors, no secrets), deleted "
                     "with the stack after two weeks at most; CloudWatch Logs encrypts it at rest with a service "
                     "key, and a customer-managed key would bill every month in every region.")
        skip_checkov(self.function, "CKV_AWS_115",
                     "Invoked only by CloudFormation, a few times per deploy; reserved concurrency would take "
                     "capacity from the account's unreserved pool without bounding anything that could run away.")
        skip_checkov(self.function, "CKV_AWS_116",
                     "Invoked only by CloudFormation for a custom resource; the handler answers CloudFormation "
                     "itself, failures included (respond.py), so a dead-letter queue would have nothing to hold.")
        skip_checkov(self.function, "CKV_AWS_117",
                     "The handler only calls AWS APIs and CloudFormation's pre-signed response URL; the rig network "
                     "has no NAT gateway or interface endpoints by design, so inside it the function could reach "
                     "neither.")
