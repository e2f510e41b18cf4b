//! Plain TCP.

use super::{
    BoxFuture, Connection, Connector, OutgoingFrame, READ_BUFFER_BYTES, RawResponse, read_response,
    write_frame,
};
use std::io;
use std::net::SocketAddr;
use tokio::io::BufReader;
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

/// Plain TCP.
#[derive(Debug, Clone, Copy)]
pub struct TcpConnector {
    /// Whether TCP_NODELAY is set on new sockets.
    pub nodelay: bool,
}

impl Connector for TcpConnector {
    fn connect<'a>(&'a self, address: &'a str) -> BoxFuture<'a, io::Result<Box<dyn Connection>>> {
        Box::pin(async move {
            let stream = TcpStream::connect(address).await?;
            stream.set_nodelay(self.nodelay)?;
            let peer = stream.peer_addr().ok();
            let local = stream.local_addr().ok();
            let (reader, writer) = stream.into_split();
            Ok(Box::new(TcpConnection {
                reader: BufReader::with_capacity(READ_BUFFER_BYTES, reader),
                writer,
                peer,
                local,
                answered: false,
            }) as Box<dyn Connection>)
        })
    }
}

/// A TCP session.
#[derive(Debug)]
pub struct TcpConnection {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    peer: Option<SocketAddr>,
    local: Option<SocketAddr>,
    /// Whether any response arrived on this connection.
    answered: bool,
}

impl Connection for TcpConnection {
    fn round_trip<'a>(
        &'a mut self,
        frame: OutgoingFrame<'a>,
    ) -> BoxFuture<'a, io::Result<RawResponse>> {
        Box::pin(async move {
            write_frame(&mut self.writer, frame).await?;
            match read_response(&mut self.reader, frame.protocol).await {
                Ok(response) => {
                    self.answered = true;
                    Ok(response)
                }
                // A TLS listener drops a plain client after reading garbage instead of a
                // ClientHello: the most likely cause when the very first answer never comes.
                Err(error)
                    if !self.answered
                        && matches!(
                            error.kind(),
                            io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset
                        ) =>
                {
                    let peer = self.peer.map_or_else(String::new, |p| format!(" at {p}"));
                    Err(io::Error::new(
                        error.kind(),
                        format!(
                            "the server{peer} closed the connection before answering ({error}); \
                             if TLS is enabled on its TCP port, connect with TLS (iggy+tls://, \
                             tls=true)"
                        ),
                    ))
                }
                Err(error) => Err(error),
            }
        })
    }

    fn peer_address(&self) -> Option<SocketAddr> {
        self.peer
    }

    fn local_address(&self) -> Option<SocketAddr> {
        self.local
    }
}
