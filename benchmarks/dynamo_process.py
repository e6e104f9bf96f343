"""What dynamo_baseline.py and dynamo_compare.py share: where the interop scripts are, and a worker process."""

import os
import signal
import subprocess
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORKER = os.path.join(ROOT, "interop", "dynamo_worker.py")
CLIENT = os.path.join(ROOT, "interop", "dynamo_client.py")


class Process:
    """A worker in its own process until stop(), its READY line awaited (a FAILED line or its end: it did not start)."""

    def __init__(self, command, name):
        self.name = name
        self.stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        self.lines = []
        self.ready = threading.Event()
        threading.Thread(target=self.read, daemon=True).start()
        if not self.ready.wait(180) or not any(line.startswith("READY") for line in self.lines):
            self.stop()
            raise RuntimeError("%s did not start: %s" % (name, self.output()))

    def read(self):
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))
            if line.startswith(("READY", "FAILED")):
                self.ready.set()
        self.ready.set()

    def output(self):
        self.stderr.seek(0)
        return "\n".join(self.lines) + "\n" + self.stderr.read().decode("utf-8", "replace")[-2000:]

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # a worker deregisters, prints DONE and ends
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
