#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# acpi-shutdown: a guest that powers off when asked to (virsh shutdown),
# for the host's lifecycle test. No daemon here handles the ACPI power
# button, so the script watches the kernel's count of fixed-event power
# button presses and ends at the first (/init then powers off); it gives
# up after DXA_SECONDS (default 300).
# Needs: the ACPI button driver (build_image(modules=['button'])), which
# enables the power button; the domain's nvdimm is left alone.
. /daxfile/lib/guest-lib.sh

presses() {
    # "       1   EN     enabled      unmasked": the count comes first
    # shellcheck disable=SC2046
    set -- $(cat /sys/firmware/acpi/interrupts/ff_pwr_btn 2>/dev/null)
    echo "${1:-0}"
}

dx_plan 1
echo "DAXFILE-ACPI: ready" >/dev/console
left=$(( ${DXA_SECONDS:-300} * 5 ))
while [ "$(presses)" -eq 0 ] && [ "$left" -gt 0 ]; do
    left=$((left - 1))
    sleep 0.2
done
dx_run "the ACPI power button was pressed" test "$(presses)" -gt 0
dx_done
