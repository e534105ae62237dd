#!/usr/bin/env python3
"""Mechanical counter: N zero-padded digits; changed digits roll to their new value (pygame)."""
import time

import common  # sets up pygame's environment before pygame is imported
import pygame

BG = (18, 18, 18)
BOX = (55, 71, 79)
FG = (236, 239, 241)
ROLL_S = 0.5


def ease(p):
    return 1 - (1 - p) ** 3


class Counter:
    def __init__(self, screen, digits=6):
        self.screen = screen
        self.w, self.h = screen.get_size()
        self.digits = digits
        self.value = 0
        self.rolls = {}  # digit index -> (old, new, start, direction)
        cell_w = self.w * 0.8 / digits
        self.cell = pygame.Rect(0, 0, int(cell_w * 0.9), int(self.h * 0.45))
        self.left = int(self.w * 0.1)
        self.top = int(self.h * 0.3)
        self.step = int(cell_w)
        f = common.font(common.BOLD, self.cell.height * 0.8)
        self.glyphs = [f.render(str(d), True, FG) for d in range(10)]
        self.label = common.font(common.REGULAR, self.h / 14).render("SCORE", True, FG)

    def box(self, i):
        return pygame.Rect(self.left + i * self.step, self.top, self.cell.width, self.cell.height)

    def shown(self, value):
        return [int(c) for c in str(value).zfill(self.digits)]

    def set(self, value, now):
        old, new = self.shown(self.value), self.shown(value)
        direction = 1 if value > self.value else -1
        for i, (a, b) in enumerate(zip(old, new)):
            if a != b:
                self.rolls[i] = (a, b, now, direction)
        self.value = value

    def draw_digit(self, i, now):
        r = self.box(i)
        pygame.draw.rect(self.screen, BOX, r, border_radius=r.width // 8)
        self.screen.set_clip(r)
        if i in self.rolls:
            a, b, start, d = self.rolls[i]
            p = min(1.0, (now - start) / ROLL_S)
            off = int(ease(p) * r.height) * d
            ga, gb = self.glyphs[a], self.glyphs[b]
            self.screen.blit(ga, ga.get_rect(center=(r.centerx, r.centery - off)))
            self.screen.blit(gb, gb.get_rect(center=(r.centerx, r.centery - off + d * r.height)))
            if p >= 1:
                del self.rolls[i]
        else:
            g = self.glyphs[self.shown(self.value)[i]]
            self.screen.blit(g, g.get_rect(center=r.center))
        self.screen.set_clip(None)
        return r

    def draw_full(self, now):
        self.screen.fill(BG)
        self.screen.blit(self.label, self.label.get_rect(center=(self.w // 2, self.h // 6)))
        for i in range(self.digits):
            self.draw_digit(i, now)
        pygame.display.flip()

    def draw_rolling(self, now):
        """Redraws only the rolling digits and updates just those rectangles."""
        dirty = [self.draw_digit(i, now) for i in list(self.rolls)]
        pygame.display.update(dirty)
        return bool(dirty)


def run(counter, seconds=None):
    fps = pygame.time.Clock()
    start = time.monotonic()
    counter.draw_full(time.monotonic())
    while seconds is None or time.monotonic() - start < seconds:
        for event in pygame.event.get():
            if event.type == pygame.QUIT:
                return
            if event.type == pygame.KEYDOWN and event.key in (pygame.K_UP, pygame.K_KP_PLUS):
                counter.set((counter.value + 1) % 10 ** counter.digits, time.monotonic())
            if event.type == pygame.KEYDOWN and event.key in (pygame.K_DOWN, pygame.K_KP_MINUS):
                counter.set(max(0, counter.value - 1), time.monotonic())
        if counter.rolls:
            counter.draw_rolling(time.monotonic())
            fps.tick(60)
        else:
            pygame.event.wait(100)


def main():
    args = common.parse(__doc__)
    screen = common.open_screen(args)
    counter = Counter(screen)
    if args.first_frame:
        counter.draw_full(0.0)
        common.first_frame()
        for k in range(60):
            if k % 30 == 0:
                counter.set(counter.value + 1, k / 60)
            counter.draw_rolling(k / 60)
        common.report_peak_rss()
        return
    if args.bench:
        # Same frames as kioskd-bench: increments of 1 (one digit rolls) and 099999 -> 100000
        # (six digits roll), each animation drawn at 60 frames per second of simulated time.
        one, six, full = [], [], []
        t = 0.0
        frames_per_roll = int(ROLL_S * 60) + 1

        def roll_frames(out):
            # Frames of one animation at 60 per simulated second; only frames that drew count.
            nonlocal t
            for _ in range(frames_per_roll):
                t += 1 / 60
                t0 = time.perf_counter()
                drew = counter.draw_rolling(t)
                ms = (time.perf_counter() - t0) * 1000
                if drew:
                    out.append(ms)
        counter.set(123456, t)
        t += 2
        counter.draw_full(t)
        counter.rolls.clear()
        step = 0
        while len(one) < args.bench:
            step += 1
            counter.set(123456 + step, t)
            roll_frames(one)
        while len(six) < args.bench:
            counter.set(99999, t)
            t += 1
            counter.draw_rolling(t)
            counter.set(100000, t)
            roll_frames(six)
        for _ in range(args.bench):
            full.append(common.timed(lambda: counter.draw_full(t)))
        common.emit({"scene": "counter", "size": [args.width, args.height],
                     "roll_frame_ms": one[:args.bench], "roll6_frame_ms": six[:args.bench], "full_redraw_ms": full})
        return
    if args.idle:
        meter = common.IdleMeter()
        run(counter, args.idle)
        meter.report("counter")
        return
    run(counter)


if __name__ == "__main__":
    main()
