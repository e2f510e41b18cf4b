//! Single-threaded wake-up lists and a two-future join, so the engine needs no async crate
//! beyond compio. Everything here lives on one shard thread.

use std::cell::RefCell;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::{Poll, Waker};

/// Tasks waiting for some condition over the partition state. Waiters re-check their condition
/// on every wake-up, so spurious wake-ups are harmless and nothing can be missed: a condition
/// is checked and the waker registered in the same poll, with no other task running between.
#[derive(Default)]
pub(crate) struct WaitList {
    wakers: RefCell<Vec<Waker>>,
    /// The previous vector, kept so that waking allocates nothing.
    spare: RefCell<Vec<Waker>>,
}

impl WaitList {
    /// Resolves once `ready` returns true. `ready` must not hold a state borrow when it returns.
    /// A waiter dropped before that (a timeout, a cancelled task) takes its waker out of the
    /// list: a consumer's poll waiting at an idle tail from another shard is a new task each
    /// time, and its wakers must not pile up until the next notification.
    pub(crate) async fn wait_until(&self, mut ready: impl FnMut() -> bool) {
        struct Registered<'a> {
            list: &'a WaitList,
            waker: Option<Waker>,
        }
        impl Drop for Registered<'_> {
            fn drop(&mut self) {
                if let Some(mine) = self.waker.take()
                    && let Ok(mut wakers) = self.list.wakers.try_borrow_mut()
                {
                    wakers.retain(|waker| !waker.will_wake(&mine));
                }
            }
        }
        let mut registered = Registered {
            list: self,
            waker: None,
        };
        poll_fn(|cx| {
            if ready() {
                Poll::Ready(())
            } else {
                let mut wakers = self.wakers.borrow_mut();
                if !wakers.iter().any(|waker| waker.will_wake(cx.waker())) {
                    wakers.push(cx.waker().clone());
                }
                registered.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }

    /// Wakes every waiter.
    pub(crate) fn notify_all(&self) {
        let mut woken = self.spare.take();
        std::mem::swap(&mut woken, &mut *self.wakers.borrow_mut());
        for waker in woken.drain(..) {
            waker.wake();
        }
        *self.spare.borrow_mut() = woken;
    }
}

/// Runs two futures concurrently on the current task and returns both outputs.
pub(crate) async fn join2<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let mut a = pin!(a);
    let mut b = pin!(b);
    let mut a_out = None;
    let mut b_out = None;
    poll_fn(|cx| {
        if a_out.is_none()
            && let Poll::Ready(value) = a.as_mut().poll(cx)
        {
            a_out = Some(value);
        }
        if b_out.is_none()
            && let Poll::Ready(value) = b.as_mut().poll(cx)
        {
            b_out = Some(value);
        }
        if a_out.is_some() && b_out.is_some() {
            Poll::Ready((
                a_out.take().expect("checked"),
                b_out.take().expect("checked"),
            ))
        } else {
            Poll::Pending
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    #[test]
    fn waiters_wake_when_the_condition_holds() {
        compio::runtime::Runtime::new().unwrap().block_on(async {
            let list = Rc::new(WaitList::default());
            let flag = Rc::new(Cell::new(false));
            let waiter = {
                let (list, flag) = (Rc::clone(&list), Rc::clone(&flag));
                compio::runtime::spawn(async move {
                    list.wait_until(|| flag.get()).await;
                    7
                })
            };
            compio::time::sleep(std::time::Duration::from_millis(5)).await;
            list.notify_all(); // spurious: the flag is still false
            compio::time::sleep(std::time::Duration::from_millis(5)).await;
            assert!(!waiter.is_finished());
            flag.set(true);
            list.notify_all();
            assert_eq!(waiter.await.unwrap(), 7);
        });
    }

    #[test]
    fn a_waiter_that_gives_up_leaves_no_waker_behind() {
        compio::runtime::Runtime::new().unwrap().block_on(async {
            let list = Rc::new(WaitList::default());
            for _ in 0..50 {
                let list = Rc::clone(&list);
                let waiter = compio::runtime::spawn(async move {
                    let _ = compio::time::timeout(
                        std::time::Duration::from_millis(1),
                        list.wait_until(|| false),
                    )
                    .await;
                });
                waiter.await.unwrap();
            }
            assert_eq!(
                list.wakers.borrow().len(),
                0,
                "timed-out waiters deregistered"
            );
        });
    }

    #[test]
    fn join2_runs_both_futures() {
        compio::runtime::Runtime::new().unwrap().block_on(async {
            let (a, b) = join2(
                async {
                    compio::time::sleep(std::time::Duration::from_millis(3)).await;
                    1
                },
                async { 2 },
            )
            .await;
            assert_eq!((a, b), (1, 2));
        });
    }
}
