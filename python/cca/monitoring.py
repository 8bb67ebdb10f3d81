"""A background monitor: ``Monitor`` writes a line or a CSV row of a
device's figures (allocated, reserved, peak, cached free bytes, the largest
free block, external fragmentation) every interval. Watches and profiles,
which this module held before, are ``cca.watches`` and ``cca.profiling``."""

import numbers
import sys
import threading
import time

from . import _core, memory
from ._core import human

__all__ = ["Monitor"]

_CSV_HEAD = "time,device,allocated,reserved,peak_allocated,free_cached,largest_free,fragmentation"


class Monitor:
    """A background thread writing the device's figures every ``interval``
    seconds to ``file`` (default sys.stderr): allocated, reserved, peak
    allocated, cached free bytes, the largest free block and external
    fragmentation (1 - largest free / free cached). format="line" writes a
    readable line, "csv" a header and then one row per sample (exact
    bytes). Use it in a ``with`` block, or start() and stop(); stop writes
    a last sample. ``samples`` counts the lines written."""

    def __init__(self, interval=1.0, file=None, format="line", device=None):   # noqa: A002 - the name users pass (file=sys.stdout)
        if isinstance(interval, bool) or not isinstance(interval, numbers.Real) or not interval > 0:
            raise ValueError("cca.Monitor: interval must be a positive number of seconds, got %r" % (interval,))
        if format not in ("line", "csv"):
            raise ValueError("cca.Monitor: format is \"line\" or \"csv\", got %r" % (format,))
        self.interval = float(interval)
        self.file = file
        self.format = format
        self.device = _core.device_index(device)
        self.samples = 0
        self._stop = threading.Event()
        self._thread = None

    def sample(self):
        """The figures now, as a dict."""
        s = _core.stats(self.device)
        f = memory.fragmentation(self.device)
        return {"time": time.time(), "device": self.device, "allocated": int(s.allocated_bytes[0].current),
                "reserved": int(s.reserved_bytes[0].current), "peak_allocated": int(s.allocated_bytes[0].peak),
                "free_cached": f["free_cached"], "largest_free": f["largest_free"],
                "fragmentation": f["external_fragmentation"]}

    def _write(self):
        x = self.sample()
        out = self.file or sys.stderr
        if self.format == "csv":
            if self.samples == 0:
                out.write(_CSV_HEAD + "\n")
            out.write("%.3f,%d,%d,%d,%d,%d,%d,%.6f\n" % (x["time"], x["device"], x["allocated"], x["reserved"],
                                                        x["peak_allocated"], x["free_cached"], x["largest_free"],
                                                        x["fragmentation"]))
        else:
            out.write("cca %s device %d: allocated %s, reserved %s, peak %s, cached free %s, largest free %s, "
                      "fragmentation %.3f\n" % (time.strftime("%H:%M:%S", time.localtime(x["time"])), x["device"],
                                                human(x["allocated"]), human(x["reserved"]),
                                                human(x["peak_allocated"]), human(x["free_cached"]),
                                                human(x["largest_free"]), x["fragmentation"]))
        out.flush()
        self.samples += 1

    def _run(self):
        while not self._stop.wait(self.interval):
            try:
                self._write()
            except Exception:                         # noqa: BLE001 - a closed file ends the monitor quietly
                _core.report_error("Monitor")
                return

    def start(self):
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="cca-monitor", daemon=True)
            self._thread.start()
        return self

    def stop(self):
        """Stops the thread and writes a last sample - unless the thread had
        ended on a write error, or this one fails (reported on stderr, never
        raised: a monitor does not replace the program's own exception)."""
        if self._thread is not None:
            alive = self._thread.is_alive()
            self._stop.set()
            self._thread.join()
            self._thread = None
            if alive:
                try:
                    self._write()
                except Exception:                     # noqa: BLE001
                    _core.report_error("Monitor")

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False
