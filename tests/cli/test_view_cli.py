"""``redline view`` on the command line: one ``error:`` line for a missing store or a port in use,
a warning when it listens beyond loopback, the address on the first stdout line, pages served
until Ctrl-C, and a ``redline --help`` that does not load the web stack."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import redline.cli.view as view_cli
from helpers.view_runs import build_large_run
from redline.cli.main import main


@pytest.fixture
def store_file(tmp_path) -> tuple[Path, str]:
    path = tmp_path / "view.db"
    store, run_id = build_large_run(path, attempts=8, probes=1)
    store.close()
    return path, run_id


def run(capsys, *args: str) -> tuple[int, str, list[str]]:
    """(exit status, stdout, stderr lines) of ``redline ARGS`` in-process."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return exited.value.code, out, [line for line in err.splitlines() if line.strip()]


def test_a_missing_store_is_one_error_line(tmp_path, capsys):
    code, _, err = run(capsys, "view", "--store", str(tmp_path / "none.db"), "--port", "0")
    assert code == 1 and len(err) == 1
    assert err[0].startswith("error: no store at ") and "none.db" in err[0]
    assert not (tmp_path / "none.db").exists()  # looking did not create it


def test_a_file_that_is_no_store_is_one_error_line(tmp_path, capsys):
    garbage = tmp_path / "notes.db"
    garbage.write_text("not a database\n")
    code, out, err = run(capsys, "view", "--store", str(garbage), "--port", "0")
    assert code == 1 and out == "" and len(err) == 1
    assert err[0].startswith(f"error: cannot open store {garbage}: file is not a database")


def test_a_port_in_use_is_one_error_line(store_file, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        code, out, err = run(capsys, "view", "--store", str(store_file[0]), "--port", str(port))
    assert code == 1 and out == ""
    assert err == [f"error: port {port} on 127.0.0.1 is in use (another 'redline view'?): choose another with --port"]


def test_an_unknown_host_is_one_error_line(store_file, capsys):
    code, _, err = run(capsys, "view", "--store", str(store_file[0]), "--host", "no-such-host.invalid", "--port", "0")
    assert code == 1 and len(err) == 1 and err[0].startswith("error: cannot listen on no-such-host.invalid:0")


@pytest.mark.parametrize("port", ["-1", "65536", "http"])
def test_a_bad_port_is_a_usage_error(store_file, capsys, port):
    code, _, err = run(capsys, "view", "--store", str(store_file[0]), "--port", port)
    assert code == 1 and len(err) == 1 and "--port" in err[0]


def test_beyond_loopback_it_warns_that_anyone_can_write_labels(store_file, capsys, monkeypatch):
    served: list[object] = []
    listening: list[socket.socket] = []
    ports: list[int] = []

    def bind_loopback(host: str, port: int) -> socket.socket:  # the test binds 127.0.0.1 only
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        listening.append(sock)
        ports.append(sock.getsockname()[1])
        return sock

    monkeypatch.setattr(view_cli, "bind", bind_loopback)
    monkeypatch.setattr(view_cli, "serve", lambda app, sock: served.append(app))
    code, out, err = run(capsys, "view", "--store", str(store_file[0]), "--host", "192.0.2.7", "--port", "0")
    port = ports[0]
    assert code == 0 and len(served) == 1
    assert out.splitlines() == [f"redline view: serving {store_file[0]} at http://192.0.2.7:{port}/ (Ctrl-C stops it)"]
    assert err == [
        f"warning: listening on 192.0.2.7: anyone who can reach this machine on port {port} can read the runs and write labels"
    ]
    assert listening[0].fileno() == -1  # closed after serving
    code, _, err = run(capsys, "view", "--store", str(store_file[0]), "--port", "0")
    assert code == 0 and err == []  # loopback: no warning


def test_it_serves_the_store_until_ctrl_c(store_file):
    path, run_id = store_file
    process = subprocess.Popen(
        [sys.executable, "-m", "redline", "view", "--store", str(path), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        assert line.startswith(f"redline view: serving {path} at http://127.0.0.1:")
        url = line.split(" at ")[1].split()[0]
        with httpx.Client(base_url=url, trust_env=False, timeout=20) as client:
            assert client.get(f"/api/runs/{run_id}").json()["finished"] == 8
            page = client.get(f"/runs/{run_id}")
            assert page.status_code == 200 and 'id="run-status"' in page.text
            assert "default-src 'none'" in page.headers["content-security-policy"]
            assert "server" not in page.headers
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) == 0
        assert process.stderr.read() == ""
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_the_cli_starts_without_the_web_stack():
    code = "import sys, redline.cli.main; print([m for m in ('starlette', 'uvicorn', 'jinja2') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
