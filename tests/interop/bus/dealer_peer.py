"""What every glassbox peer here (gbc_client, gbe_collector) holds: a DEALER socket connected to
the broker, and the zmq context it made or was given (terminated on close only if it made it)."""
import zmq


class DealerPeer:
    def __init__(self, broker, ctx=None):
        self.broker = broker
        self.own_ctx = ctx is None
        self.ctx = ctx or zmq.Context()
        self.socket = self.ctx.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(broker)

    def close(self):
        self.socket.close(linger=0)
        if self.own_ctx:
            self.ctx.term()
