#!/bin/sh
# Installs the pygame peer (SDL2) that kioskd-bench compares kioskd with, into Benchmarks/.venv.
# Needs python3-venv (scripts/apt-bench.txt). Safe to run again: an existing venv is reused.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check pygame
SDL_VIDEODRIVER=dummy SDL_AUDIODRIVER=dummy PYGAME_HIDE_SUPPORT_PROMPT=1 \
    "$venv/bin/python" -c 'import pygame; print("pygame", pygame.version.ver, "SDL", ".".join(map(str, pygame.get_sdl_version())))'
