"""docs/configuration.md, the flags and KubeletConfiguration reference, written from the
parser itself so it cannot drift from the code: every flag with its default, its help and
its KubeletConfiguration field, then the fields that only the file sets.

``python -m actors.app.config.reference > docs/configuration.md`` writes it;
tests/unit/app/test_configuration_reference.py fails while the committed file differs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from actors.app.config.feature_gates import ALL_ALPHA, ALL_BETA, LOCKED, OWN_DEFAULTS
from actors.app.config.flags import KubeletFlags, build_parser
from actors.app.config.kubelet_config import API_VERSION, DURATION_FIELDS, FIELD_OF_DEST, KIND
from actors.app.config.not_implemented import ANY, NOT_IMPLEMENTED, shown
from actors.app.config.pflag_values import DURATION
from actors.app.config.upstream_gates import UPSTREAM_GATES
from runtime.events.v1 import go_duration

COMMAND = "python -m actors.app.config.reference > docs/configuration.md"
"""How the reference is written again."""

_HEAD = f"""# Flags and KubeletConfiguration reference

<!-- Generated from the flag parser (actors/app/config/); do not edit by hand:
     {COMMAND} -->

`kubelet-actors` takes upstream's kubelet flags (those it acts on) and a
KubeletConfiguration file: `--config`, with `apiVersion: {API_VERSION}`
and `kind: {KIND}`, decoded strictly as upstream decodes it. Every field of
upstream's KubeletConfiguration is known; a field upstream does not have stops the start in
upstream's words (`failed to load Kubelet config file /etc/kubelet.yaml, error failed to
decode: strict decoding error: unknown field "foo"`, nested ones dotted:
`unknown field "authentication.anonymous.enabeld"`), and so does a key written twice
(top level or nested), in the strict decoder's words (`strict decoding error: yaml:
unmarshal errors:` then `line 4: key "maxPods" already set in map`; a JSON file's
`duplicate field "maxPods"`). (Upstream's kubelet logs these two for a v1beta1 `--config`
file and reads it leniently, the last of two keys winning; it refuses them in a drop-in.
kubelet-actors refuses both in either.) A field that kubelet-actors does not
implement is accepted only at upstream's default (or null, or the zero value upstream's
defaulting turns into that default, as kubeadm writes `0s`), and any other value is an
error naming the field (`kubelet-actors does not implement cpuManagerPolicy: ...`), never a
silent default: the section "Fields kubelet-actors does not implement" lists them.

In the `--config` file a zero value that upstream's defaulting replaces is the default here
too: `port: 0` is 10250, `syncFrequency: 0s` is 1m0s, `maxPods: 0` is 110, `address: ""` is
0.0.0.0, `authorization: {{mode: ""}}` is the mode's default, and an unset
`nodeStatusReportFrequency` follows a `nodeStatusUpdateFrequency` the file sets (else 5m0s).
Fields that are pointers upstream keep their zero (`readOnlyPort: 0` and `healthzPort: 0`
turn those ports off). Relative paths in the file (`staticPodPath`, `tlsCertFile`,
`tlsPrivateKeyFile`, `authentication.x509.clientCAFile`, `resolvConf`, `podLogsDir`) are
resolved against the file's directory. A flag is not defaulted: `--port 0` is refused as
upstream refuses it (`invalid configuration: port (--port) 0 must be between 1 and 65535,
inclusive`); `enableServer: false` (`--enable-server=false`) turns the main port off.

`--config-dir` names a directory of drop-ins, as upstream's: every `*.conf` file under it
(subdirectories too), in lexical order, is a whole KubeletConfiguration document (kind and
apiVersion), decoded as strictly, and merged over `--config` and the drop-ins before it as a
JSON merge patch: a field it sets replaces the earlier value, a list whole
(`clusterDNS`), a map key by key (`featureGates`, `evictionHard`), and a null puts the
default back. As upstream, a drop-in is not defaulted (upstream merges it as written): a
zero there is that value (`port: 0` and `syncFrequency: 0s` are refused, as upstream
refuses them), and a relative path stays relative to the working directory, as a flag's.
A flag given on the command line wins over the file and every drop-in.
Every value is checked before anything starts, as upstream checks it; an error names the
flag, or the file (or drop-in) and field, that set the value. Flags are
written as upstream's (spf13/pflag): `--flag value` or `--flag=value`; a boolean flag
alone is true, and takes a value only after `=` (`--seccomp-default=false`), in Go's
spellings (`true`, `false`, `1`, `0`, `t`, `f`, `TRUE`, `False`, ...). Durations are Go's
(`90s`, `1m30s`, `500ms`: each number with its unit; `0` alone needs none). Each flag's value
has upstream's pflag type (`--help` shows it: `int32`, `duration`, `ip`, `strings`,
`mapStringString`, ...), and a value it refuses stops the start, before anything runs, with
exit code 2 and upstream's words, e.g. `Error: failed to parse kubelet flag: invalid
argument "abc" for "--max-pods" flag: strconv.ParseInt: parsing "abc": invalid syntax`.
`--v` takes klog's numbers: 0 to 3 log INFO lines and above, 4 adds DEBUG, 5 and more TRACE.
"""


def _cell(text: str) -> str:
    """``text`` inside a Markdown table cell: no line breaks, no cell or HTML delimiters."""
    return (" ".join(text.split()).replace("|", "\\|").replace("<", "&lt;")
            .replace(">", "&gt;"))


def _code(text: str) -> str:
    return "`" + text.replace("|", "\\|") + "`"


def _value(value: Any, duration: bool) -> str:
    """A default as the user writes it."""
    if isinstance(value, bool):
        return _code(str(value).lower())
    if duration and isinstance(value, int | float):
        return _code(go_duration(value))
    if value == "":
        return '`""`'
    return _code(str(value))


def _flag_default(action: argparse.Action) -> str:
    if action.default is None:
        return "see description"  # it depends on another flag: the help says how
    return _value(action.default, duration=action.type is DURATION)


def _file_only_defaults() -> dict[str, Any]:
    """KubeletFlags' defaults, by field name: the file-only fields' defaults."""
    names = KubeletFlags.__struct_fields__
    defaults = KubeletFlags.__struct_defaults__
    return dict(zip(names[len(names) - len(defaults):], defaults, strict=True))


def reference(parser: argparse.ArgumentParser | None = None) -> str:
    """The whole reference, as Markdown."""
    parser = parser or build_parser()
    lines = [_HEAD, "## Flags", "",
             "| Flag | Default | KubeletConfiguration field | Description |",
             "|---|---|---|---|"]
    dests: set[str] = set()
    for action in parser._actions:  # argparse has no public list of its flags
        if isinstance(action, argparse._HelpAction):
            continue
        dests.add(action.dest)
        names = ", ".join(_code(o) for o in action.option_strings)
        field = FIELD_OF_DEST.get(action.dest)
        help_text = (action.help or "").replace("%%", "%")
        if action.choices is not None:
            help_text += f" (one of {', '.join(map(str, action.choices))})"
        lines.append(f"| {names} | {_flag_default(action)} | "
                     f"{_code(field) if field else ''} | {_cell(help_text)} |")
    defaults = _file_only_defaults()
    lines += ["", "## Fields the file alone sets", "",
              "These KubeletConfiguration fields have no flag here (upstream has none, or "
              "kubelet-actors takes only the field).", "",
              "| KubeletConfiguration field | Default |", "|---|---|"]
    for dest, field in sorted(FIELD_OF_DEST.items(), key=lambda item: item[1]):
        if dest not in dests:
            lines.append(f"| {_code(field)} | "
                         f"{_value(defaults[dest], field in DURATION_FIELDS)} |")
    lines += ["", "## Fields kubelet-actors does not implement", "",
              "Known, and accepted only at these values (null, unset, always is); another "
              "value stops the start naming the field.", "",
              "| KubeletConfiguration field | Accepted |", "|---|---|"]
    for field, (convert, values) in sorted(NOT_IMPLEMENTED.items()):
        allowed = ("any (upstream ignores it)" if values is ANY else
                   ", ".join(_code(shown(convert, v)) for v in values) or "null only")
        lines.append(f"| {_code(field)} | {allowed} |")
    lines += ["", "## Feature gates", "",
              "`--feature-gates` and `featureGates` know every gate of upstream's kubelet "
              "(the names of Kubernetes' pkg/features/kube_features.go and the gates it "
              "registers from k8s.io/apiserver, client-go and component-base), with "
              "upstream's defaults. A locked gate set to its other value is refused in "
              "upstream's words (`cannot set feature gate X to false, feature is locked to "
              "true`); a gate that changes what a kubelet does is accepted at its default and "
              "refused at the other value (`feature gate X=true: not implemented by "
              "kubelet-actors`); a gate of the control plane, kube-proxy or Windows nodes "
              "does nothing here, as on upstream's kubelet, and takes either value. This "
              "node's own gates take either value: "
              + ", ".join(f"`{g}` (default `{str(d).lower()}`)"
                          for g, d in OWN_DEFAULTS.items()) + ".", "",
              "| Gate | Default | Stage | Accepted |", "|---|---|---|---|"]
    for name, spec in sorted(UPSTREAM_GATES.items()):
        default = str(OWN_DEFAULTS.get(name, spec.default)).lower()
        if name in LOCKED:
            accepted = f"`{default}` (locked)"
        elif name in (ALL_ALPHA, ALL_BETA):  # true turns on the kubelet's gates too
            accepted = "`false`"
        elif name in OWN_DEFAULTS or not spec.kubelet:
            accepted = "`true`, `false`"
        else:
            accepted = f"`{default}`"
        lines.append(f"| `{name}` | `{default}` | {spec.stage.lower()} | {accepted} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    sys.stdout.write(reference())


if __name__ == "__main__":
    main()
