"""A busy reader's check of one descriptor without waiting (poll or epoll with timeout 0, as an asyncio
loop with work to do makes): shared by busy_reader.py and future_data.py, which import it from their own
folder (a script's folder is first on sys.path)."""
import select


def check_for(fd: int, wait: str):
    """A function that checks fd once, without waiting, and returns what poll/epoll reported (wait: poll, epoll
    or epoll-oneshot)."""
    if wait == "poll":
        p = select.poll()
        p.register(fd, select.POLLIN)
        return lambda: p.poll(0)
    e = select.epoll()
    if wait == "epoll":
        e.register(fd, select.EPOLLIN)
        return lambda: e.poll(0)
    # "epoll-oneshot": reported once, then re-armed by the program (a lost report is never made again)
    e.register(fd, select.EPOLLIN | select.EPOLLONESHOT)

    def check():
        ev = e.poll(0)
        if ev:
            e.modify(fd, select.EPOLLIN | select.EPOLLONESHOT)
        return ev
    return check
