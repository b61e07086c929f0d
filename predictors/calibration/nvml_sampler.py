"""The GPU's SM clock, power and throttle reasons over time, read through NVML while something else runs
(e.g. `vllm serve` under `vllm bench serve`): the power cap's state in serving, to put beside the steps of
integrations/vllm_plugin/timeline.py (both on CLOCK_MONOTONIC).

    python3 predictors/calibration/nvml_sampler.py OUT.csv [--period-ms 10] [--device 0]

Runs until SIGTERM or SIGINT. Reads only; changes no setting of the GPU. On the H200's driver (580) the
readings change every 100 ms, whatever the period asked. One CSV row per sample:
mono_ns, sm_mhz, power_mw (the instantaneous reading where the driver gives one, else the averaged one),
temp_c, reasons (the clocks-event-reasons bit mask: 0x4 software power cap, 0x20 software thermal slowdown,
0x40 hardware thermal, 0x80 hardware power brake, 0x1 GPU idle).
"""
from __future__ import annotations

import argparse
import signal
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--period-ms", type=float, default=10.0)
    ap.add_argument("--device", type=int, default=0)
    a = ap.parse_args()
    import pynvml as n
    n.nvmlInit()
    h = n.nvmlDeviceGetHandleByIndex(a.device)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))

    def power_mw() -> int:
        try:   # the instantaneous reading (NVML 12+), not the 1 s average
            v = n.nvmlDeviceGetFieldValues(h, [n.NVML_FI_DEV_POWER_INSTANT])[0]
            if v.nvmlReturn == 0:
                return v.value.uiVal
        except Exception:
            pass
        return n.nvmlDeviceGetPowerUsage(h)

    try:
        reasons = n.nvmlDeviceGetCurrentClocksEventReasons
    except AttributeError:
        reasons = n.nvmlDeviceGetCurrentClocksThrottleReasons
    period = a.period_ms / 1e3
    with open(a.out, "w") as f:
        f.write("mono_ns,sm_mhz,power_mw,temp_c,reasons\n")
        nxt = time.monotonic()
        while not stop:
            f.write(f"{time.monotonic_ns()},{n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)},{power_mw()},"
                    f"{n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)},{reasons(h):#x}\n")
            nxt += period
            time.sleep(max(0.0, nxt - time.monotonic()))
    n.nvmlShutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
