//! One execution: what the client asked for and what the server attaches ([`execution`]),
//! the client it may ask ([`client`]), what it did so far for whoever watches ([`events`]),
//! the code made ready for a worker ([`prepare`]), the loop that serves the worker's
//! requests through a narrow [`drive::Host`] ([`drive`]), its captured output ([`output`]),
//! its deadline, which stands still while a person is asked ([`clock`]), the ledger it
//! shares with the skills it calls ([`ledger`]), and the log of their calls and answers,
//! which a run with a handle keeps in the store and a resumed run replays ([`calllog`]).

pub mod calllog;
pub mod client;
pub mod clock;
pub mod drive;
pub mod events;
pub mod execution;
pub mod ledger;
pub mod output;
pub mod prepare;
