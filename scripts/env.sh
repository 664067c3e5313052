# Sourced by the project's scripts: offline-safe settings for the CDK CLI, npm and jsii.
# shellcheck shell=bash
export CDK_DISABLE_VERSION_CHECK=1        # the CLI's npm version check (TTY only)
export CDK_DISABLE_CLI_TELEMETRY=true     # also off in cdk.json ("cli-telemetry": false)
export NPM_CONFIG_UPDATE_NOTIFIER=false   # npm/npx's registry check for a newer npm (also in .npmrc)
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20
# The AWS SDK for JavaScript inside the pinned CLI says on every call to AWS that its releases after
# January 2027 need Node 22; the pinned CLI runs on Node 20 (scripts/check-node says so once, at setup).
export AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED=true
# Python keeps its compiled modules (__pycache__ in .venv and the project, ignored by git). Where
# PYTHONDONTWRITEBYTECODE is set (many container images set it), every Python process would compile
# the modules it imports from source again: about 7 s of CPU for aws-cdk-lib's in each synth of the
# app, which the CDK CLI runs once per command (measured: a synth took 17 s without the caches, 7 s with).
unset PYTHONDONTWRITEBYTECODE
PROJECT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PROJECT_DIR
export CDK_HOME="${CDK_HOME:-$PROJECT_DIR/.cdk-home}"
export PATH="$PROJECT_DIR/.venv/bin:$PROJECT_DIR/node_modules/.bin:$PATH"
