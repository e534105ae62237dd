#!/usr/bin/env python3
"""Colour clock: HH:MM:SS on a background whose colour follows the time (pygame)."""
import time

import common  # sets up pygame's environment before pygame is imported
import pygame


def colour_for(t):
    return (round(t.tm_hour * 255 / 24), round(t.tm_min * 255 / 60), round(t.tm_sec * 255 / 60))


def luminance(c):
    def lin(v):
        v /= 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(v) for v in c)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def text_colour(bg):
    # White text unless black reads better (WCAG contrast).
    lb = luminance(bg)
    return (255, 255, 255) if (1.05 / (lb + 0.05)) >= ((lb + 0.05) / 0.05) else (0, 0, 0)


class Clock:
    def __init__(self, screen):
        self.screen = screen
        self.w, self.h = screen.get_size()
        self.big = common.font(common.BOLD, self.h / 4.5)
        self.small = common.font(common.REGULAR, self.h / 14)

    def draw(self, t):
        bg = colour_for(t)
        fg = text_colour(bg)
        self.screen.fill(bg)
        text = self.big.render(time.strftime("%H:%M:%S", t), True, fg)
        self.screen.blit(text, text.get_rect(center=(self.w // 2, self.h * 9 // 20)))
        label = self.small.render("#%02X%02X%02X" % bg, True, fg)
        self.screen.blit(label, label.get_rect(center=(self.w // 2, self.h * 3 // 4)))
        pygame.display.flip()


def run(clock, seconds=None):
    start = time.monotonic()
    while seconds is None or time.monotonic() - start < seconds:
        clock.draw(time.localtime())
        # Sleep until the next second boundary, still answering window events.
        deadline = time.time()
        deadline = int(deadline) + 1
        while True:
            left = deadline - time.time()
            if left <= 0:
                break
            event = pygame.event.wait(max(1, int(left * 1000)))
            if event.type == pygame.QUIT:
                return


def main():
    args = common.parse(__doc__)
    screen = common.open_screen(args)
    clock = Clock(screen)
    if args.first_frame:
        clock.draw(time.localtime())
        common.first_frame()
        base = time.time()
        for i in range(10):
            clock.draw(time.localtime(base + i))
        common.report_peak_rss()
        return
    if args.bench:
        base = 1_700_000_000
        frames = [common.timed(lambda i=i: clock.draw(time.localtime(base + i))) for i in range(args.bench)]
        common.emit({"scene": "clock", "size": [args.width, args.height], "tick_ms": frames})
        return
    if args.idle:
        clock.draw(time.localtime())
        meter = common.IdleMeter()
        run(clock, args.idle)
        meter.report("clock")
        return
    run(clock)


if __name__ == "__main__":
    main()
