"""Env vars from a file in an emptyDir (``valueFrom.fileKeyRef``, upstream's EnvFiles): the file
parsed as upstream's ParseEnv parses it, joined to its volume as SecureJoin joins it and
never read through a symlink out of the volume (runtime.kuberuntime.env_file), and what
make_env asks the node (a recording HostPaths) and tells the pod."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from runtime.errors import SyncError
from runtime.kuberuntime.container_config import make_env
from runtime.kuberuntime.env_file import (
    MAX_LINE,
    MAX_SYMLINKS,
    EnvFileError,
    parse_env,
    read_env_key,
    secure_join,
)
from runtime.kuberuntime.host_paths import EnvFileRead, NodeHostPaths, SubPathMount
from runtime.kuberuntime.settings import NodeSettings
from runtime.kuberuntime.subpath import SubPath
from runtime.kuberuntime.volumes import set_up_volumes, volume_path
from runtime.pod.model import (
    Container,
    EmptyDirVolumeSource,
    EnvVar,
    EnvVarSource,
    FileKeySelector,
    ObjectMeta,
    Pod,
    PodSpec,
    Volume,
)


def parse(text: bytes | str, key: str) -> str:
    data = text.encode() if isinstance(text, str) else text
    return parse_env(io.BytesIO(data), key, "/v/config.env")


@pytest.mark.parametrize(("text", "key", "value"), [
    ("DB='postgres'\n", "DB", "postgres"),
    ("A='1'\nB='2'\n", "B", "2"),
    ("A='1'\nA='2'\n", "A", "1"),  # the first line naming the key wins
    ("# a comment\n\n   \t\n  DB='x'\n", "DB", "x"),  # blank and comment lines, indent
    ("DB='x' # why\n", "DB", "x"),  # a comment after the closing quote
    ("DB='x'   \n", "DB", "x"),
    ("DB='a b # not a comment'\n", "DB", "a b # not a comment"),  # literal inside quotes
    ("DB='$HOME \\n \"q\"'\n", "DB", '$HOME \\n "q"'),  # no expansion, no escapes
    ("DB='two\nlines'\n", "DB", "two\nlines"),  # a value spans lines
    ("DB='x'\r\n", "DB", "x"),  # a carriage return before the newline goes (ScanLines)
    ("DB='x'", "DB", "x"),  # no newline at the end
    ("DB= 'x'\n", "DB", ""),  # a blank after '=' makes it empty, as a shell does
    ("OTHER= 'x'\nDB='y'\n", "DB", "y"),
    ("DB=''\n", "DB", ""),
    ("OTHER='1'\n", "DB", ""),  # no such key
    ("", "DB", ""),
    ("DB='x'\nbroken\n", "DB", "x"),  # the read stops at the key
    ("A B='x'\n", "A B", "x"),  # only a blank right before '=' is refused
])
def test_values_are_read_as_upstream_reads_them(text: str, key: str, value: str) -> None:
    assert parse(text, key) == value


@pytest.mark.parametrize(("text", "error"), [
    ("DB=postgres\n", "at line 1: value must be enclosed in single quotes"),
    ('DB="postgres"\n', "at line 1: value must be enclosed in single quotes"),
    ("DB=\n", "at line 1: value must be enclosed in single quotes"),
    ("# c\nnothing here\n", "at line 2: missing '='"),
    ("='x'\n", "at line 1: empty variable name"),
    ("DB ='x'\n", "at line 1: whitespace before '=' is not allowed"),
    ("DB='x' y\n", "at line 1: unexpected content after closing quote"),
    ("A='one\ntwo' y\n", "at line 2: unexpected content after closing quote"),
    ("X='1'\nA='one\ntwo\n", "starting at line 2: unclosed single quote"),
])
def test_a_malformed_line_before_the_key_fails_in_upstreams_words(text: str,
                                                                  error: str) -> None:
    with pytest.raises(EnvFileError) as caught:
        parse(text, "DB")
    assert str(caught.value) == f"invalid environment variable format {error}"


def test_a_line_of_64_kib_or_more_ends_the_read_as_bufio_scanner_does() -> None:
    fits = "A='" + "x" * (MAX_LINE - 5) + "'"  # MAX_LINE - 1 bytes before the newline
    assert len(fits) == MAX_LINE - 1
    assert parse(f"{fits}\nDB='y'\n", "DB") == "y"
    assert parse(f"{fits}\nDB='y'", "DB") == "y"
    too_long = fits + " "
    with pytest.raises(EnvFileError) as caught:
        parse(f"{too_long}\nDB='y'\n", "DB")
    assert str(caught.value) == ('error reading environment variable file "/v/config.env": '
                                 "bufio.Scanner: token too long")
    with pytest.raises(EnvFileError, match="token too long"):
        parse(too_long, "DB")  # the last line, unterminated, is held to the same
    # A key before the long line is found: the read never gets there.
    assert parse(f"DB='y'\n{too_long}\n", "DB") == "y"
    # Inside an open quote the scanner's end reads as an unclosed quote, as upstream's does.
    with pytest.raises(EnvFileError, match="starting at line 1: unclosed single quote"):
        parse(f"DB='a\n{too_long}\n", "DB")


def test_a_value_that_is_not_utf8_cannot_be_parsed() -> None:
    with pytest.raises(EnvFileError, match="not valid UTF-8"):
        parse(b"DB='\xff'\n", "DB")


@pytest.fixture
def volume(tmp_path: Path) -> Path:
    vol = tmp_path / "vol"
    vol.mkdir()
    return vol


def test_secure_join_keeps_every_symlink_inside_the_root(volume: Path, tmp_path: Path) -> None:
    (volume / "d").mkdir()
    (volume / "abs").symlink_to("/etc/passwd")
    (volume / "up").symlink_to("../../../../etc")
    (volume / "inside").symlink_to("d")
    (volume / "d" / "back").symlink_to("/d")
    root = str(volume)
    assert secure_join(root, "config.env") == f"{root}/config.env"
    assert secure_join(root, "abs") == f"{root}/etc/passwd"
    assert secure_join(root, "up/passwd") == f"{root}/etc/passwd"
    assert secure_join(root, "../../x") == f"{root}/x"
    assert secure_join(root, "/d/f") == f"{root}/d/f"
    assert secure_join(root, "inside/back/back/f") == f"{root}/d/f"
    assert secure_join(root, "missing/../../d") == f"{root}/d"
    assert secure_join(root, ".") == root


def test_a_symlink_loop_is_eloop_in_secure_joins_words(volume: Path) -> None:
    (volume / "a").symlink_to("b")
    (volume / "b").symlink_to("a")
    with pytest.raises(EnvFileError) as caught:
        secure_join(str(volume), "a")
    assert str(caught.value) == f"SecureJoin {volume}/a: too many levels of symbolic links"


def test_secure_join_walks_at_most_255_symlinks(volume: Path) -> None:
    assert MAX_SYMLINKS == 255
    (volume / "end").write_text("")
    for i in range(256):  # l0 -> l1 -> ... -> l255 -> end
        (volume / f"l{i}").symlink_to(f"l{i + 1}" if i < 255 else "end")
    assert secure_join(str(volume), "l1") == f"{volume}/end"  # 255 symlinks
    with pytest.raises(EnvFileError, match="too many levels of symbolic links"):
        secure_join(str(volume), "l0")  # 256


def test_a_key_is_read_from_the_file_in_the_volume(volume: Path) -> None:
    (volume / "sub").mkdir()
    (volume / "sub" / "config.env").write_text("DB='postgres'\n")
    (volume / "link.env").symlink_to("sub/config.env")
    assert read_env_key(str(volume), "sub/config.env", "DB") == EnvFileRead(
        value="postgres", path=f"{volume}/sub/config.env")
    # A symlink that stays inside the volume is followed, as upstream's SecureJoin follows it.
    assert read_env_key(str(volume), "link.env", "DB").value == "postgres"
    assert read_env_key(str(volume), "sub/config.env", "NOPE") == EnvFileRead(
        path=f"{volume}/sub/config.env")


def test_a_missing_file_cannot_be_parsed(volume: Path) -> None:
    read = read_env_key(str(volume), "config.env", "DB")
    assert (read.failed, read.path) == ("parse", f"{volume}/config.env")
    assert read.detail.startswith(f'failed to open environment variable file "{volume}/'
                                  'config.env": ')


@pytest.mark.parametrize("target", ["/etc/passwd", "../../../../../../etc/passwd"])
def test_a_symlink_out_of_the_volume_never_reads_the_node(volume: Path, tmp_path: Path,
                                                          target: str) -> None:
    outside = tmp_path / "node.env"
    outside.write_text("DB='the node'\n")
    (volume / "config.env").symlink_to(outside)
    (volume / "rel.env").symlink_to(target)
    for path in ("config.env", "rel.env"):
        read = read_env_key(str(volume), path, "DB")
        assert read.failed == "parse" and read.value == "", read
    # What the symlinks name is looked up inside the volume instead.
    (volume / "etc").mkdir()
    (volume / "etc" / "passwd").write_text("DB='inside'\n")
    assert read_env_key(str(volume), "rel.env", "DB").value == "inside"


def test_a_directory_swapped_for_a_symlink_after_the_join_is_refused(
        volume: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The pod swaps vol/d (a directory when joined) for a symlink out before the open:
    # the open goes from the volume down without following it.
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "config.env").write_text("DB='the node'\n")
    (volume / "d").mkdir()
    import runtime.kuberuntime.env_file as env_file

    real = env_file.secure_join

    def join_then_swap(root: str, unsafe: str) -> str:
        joined = real(root, unsafe)
        os.rmdir(volume / "d")
        (volume / "d").symlink_to(tmp_path / "out")
        return joined

    monkeypatch.setattr(env_file, "secure_join", join_then_swap)
    read = read_env_key(str(volume), "d/config.env", "DB")
    assert read.failed == "parse" and "unexpected symlink" in read.detail, read


def test_only_a_regular_file_is_read(volume: Path) -> None:
    (volume / "dir.env").mkdir()
    os.mkfifo(volume / "fifo.env")  # a plain open would hang the pod worker
    assert "is a directory" in read_env_key(str(volume), "dir.env", "DB").detail
    assert "not a regular file" in read_env_key(str(volume), "fifo.env", "DB").detail


def test_the_node_reads_it_through_host_paths(volume: Path) -> None:
    (volume / "c.env").write_text("K='v'\n")
    assert NodeHostPaths().read_env_key(str(volume), "c.env", "K").value == "v"


class RecordingHostPaths:
    """Answers ``read_env_key`` with ``answer`` and records each call."""

    def __init__(self, answer: EnvFileRead) -> None:
        self.answer = answer
        self.reads: list[tuple[str, str, str]] = []

    def prepare(self, path: str, kind: str) -> str:
        return ""

    def mount_sub_path(self, sub: SubPath) -> SubPathMount:
        raise AssertionError("no subPath here")

    def clean_sub_paths(self, pod_dir: str) -> str:
        return ""

    def read_env_key(self, volume_path: str, path: str, key: str) -> EnvFileRead:
        self.reads.append((volume_path, path, key))
        return self.answer


@pytest.fixture
def settings(tmp_path: Path) -> NodeSettings:
    return NodeSettings(node_name="node-a", root_dir=str(tmp_path / "root"),
                        pod_logs_dir=str(tmp_path / "logs"))


def file_pod(*refs: tuple[str, FileKeySelector], value_first: bool = False) -> Pod:
    env = tuple(EnvVar(name=n, value_from=EnvVarSource(file_key_ref=r)) for n, r in refs)
    if value_first:
        env = (EnvVar(name="DB", value="before"), *env)
    c = Container(name="app", image="busybox", env=env)
    return Pod(metadata=ObjectMeta(name="p", namespace="default", uid="uid-env"),
               spec=PodSpec(containers=(c,), volumes=(
                   Volume(name="shared", empty_dir=EmptyDirVolumeSource()),)))


def ref(key: str = "DB", volume: str = "shared", optional: bool | None = None
        ) -> FileKeySelector:
    return FileKeySelector(volume_name=volume, path="config.env", key=key, optional=optional)


def env_of(pod: Pod, settings: NodeSettings, host: RecordingHostPaths) -> dict[str, str]:
    return make_env(pod, pod.spec.containers[0], "", "", settings=settings, host_paths=host)


def test_make_env_asks_the_node_for_the_key_in_the_volumes_dir(settings: NodeSettings) -> None:
    pod = file_pod(("DATABASE", ref()))
    host = RecordingHostPaths(EnvFileRead(value="postgres", path="/x/config.env"))
    assert env_of(pod, settings, host) == {"DATABASE": "postgres"}
    where = volume_path(pod, pod.spec.volumes[0], settings)
    assert host.reads == [(where, "config.env", "DB")]


def test_a_missing_key_fails_in_upstreams_words_unless_optional(settings: NodeSettings) -> None:
    host = RecordingHostPaths(EnvFileRead(path="/x/config.env"))
    with pytest.raises(SyncError) as caught:
        env_of(file_pod(("DB", ref())), settings, host)
    assert caught.value.reason == "CreateContainerConfigError"
    assert caught.value.message == ('environment variable key "DB" not found in file '
                                    '"/x/config.env"')
    with pytest.raises(SyncError):
        env_of(file_pod(("DB", ref(optional=False))), settings, host)
    # Optional: unset, even over a value set before it (upstream skips the variable).
    assert env_of(file_pod(("DB", ref(optional=True))), settings, host) == {}
    assert env_of(file_pod(("DB", ref(optional=True)), value_first=True), settings,
                  host) == {"DB": "before"}


def test_a_file_that_cannot_be_read_fails_even_an_optional_reference(
        settings: NodeSettings) -> None:
    host = RecordingHostPaths(EnvFileRead(path="/x/config.env", failed="parse",
                                          detail="open /x/config.env: no such file"))
    for optional in (None, True):
        with pytest.raises(SyncError) as caught:
            env_of(file_pod(("DB", ref(optional=optional))), settings, host)
        assert (caught.value.reason, caught.value.message) == (
            "CreateContainerConfigError", "couldn't parse env file")


def test_a_join_that_fails_gives_the_pod_its_words(settings: NodeSettings) -> None:
    host = RecordingHostPaths(EnvFileRead(failed="join", detail="SecureJoin /v/a: too many "
                                                                "levels of symbolic links"))
    with pytest.raises(SyncError) as caught:
        env_of(file_pod(("DB", ref())), settings, host)
    assert caught.value.message == "SecureJoin /v/a: too many levels of symbolic links"


def test_a_volume_the_pod_does_not_have_is_named(settings: NodeSettings) -> None:
    host = RecordingHostPaths(EnvFileRead(value="v"))
    with pytest.raises(SyncError) as caught:
        env_of(file_pod(("DB", ref(volume="other"))), settings, host)
    assert caught.value.message == 'cannot find the volume "other" referenced by FileKeyRef'
    assert host.reads == []


def test_the_value_reaches_the_config_from_a_real_volume(settings: NodeSettings) -> None:
    from runtime.kuberuntime.container_config import generate_container_config

    pod = file_pod(("DB", ref()))
    assert set_up_volumes(pod, settings) == ()
    where = Path(volume_path(pod, pod.spec.volumes[0], settings))
    (where / "config.env").write_text("DB='postgres'\n")
    cfg = generate_container_config(pod, pod.spec.containers[0], "", 0, "", settings,
                                    host_paths=NodeHostPaths())
    assert ("DB", "postgres") in {(kv.key, kv.value) for kv in cfg.envs}


def test_a_recorded_read_is_answered_alike_on_replay() -> None:
    # A trace keeps the answer as JSON; the replay rebuilds it by the service's return type.
    import msgspec

    from actors.kubelet.trace import KubeletWorld
    from runtime.kuberuntime.host_paths import HOST_PATHS_TARGET

    read = EnvFileRead(value="postgres", path="/v/config.env")
    kind = KubeletWorld().result_type(HOST_PATHS_TARGET, "read_env_key")
    assert msgspec.convert(msgspec.json.decode(msgspec.json.encode(read)), kind) == read
